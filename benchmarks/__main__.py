"""``python -m benchmarks``: sigform vs DSPy 3.4.1, side by side, in one run.

Prints the table and writes it to ``benchmarks/results/results.json`` and ``results.md``.
DSPy runs from its own virtualenv (``benchmarks/.venv-dspy``), created on the first run.

    python -m benchmarks                 # everything but the local model (~10 min on 2 cores)
    python -m benchmarks --local         # also the local-model comparisons (demo task, real-model suite)
    python -m benchmarks --only import,corpus
    python -m benchmarks --no-dspy       # sigform's side only
    python -m benchmarks --quick         # tiny repeat counts (a smoke run; figures are noise)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.report import print_table, write
from benchmarks.suite import DEFAULT, LOCAL, NAMES, Options, run_suite

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="sigform vs DSPy 3.4.1")
    parser.add_argument("--only", help=f"comma-separated measurements from {', '.join(NAMES)}")
    parser.add_argument("--local", action="store_true",
                        help="also run the local-model comparisons: demo task, real-model suite (an hour)")
    parser.add_argument("--no-dspy", action="store_true", help="measure sigform only")
    parser.add_argument("--quick", action="store_true", help="tiny repeat counts (smoke run)")
    parser.add_argument("--memory-calls", type=int, help="sequential calls for the memory figure (10000)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results.json/.md go (default benchmarks/results/ for a full run: DSPy and --local; "
        "benchmarks/results/partial/ otherwise, so a partial run never replaces the committed table)",
    )
    args = parser.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else DEFAULT + (LOCAL if args.local else ())
    opts = Options.quick() if args.quick else Options()
    opts.only = only
    opts.with_dspy = not args.no_dspy
    if args.memory_calls:
        opts.memory_calls = args.memory_calls
    sections, meta = run_suite(opts)
    print_table(sections)
    full = args.only is None and args.local and not args.quick and not args.no_dspy
    out = args.out or (RESULTS if full else RESULTS / "partial")
    json_path, md_path = write(sections, meta, out)
    print(f"wrote {json_path} and {md_path} ({meta['seconds']} s)")


if __name__ == "__main__":
    main()
