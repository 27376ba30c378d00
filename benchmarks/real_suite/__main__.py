"""``python -m benchmarks.real_suite``: run programs over the real-model suite and print the table.

    python -m benchmarks.real_suite --adapter chat --limit 5          # quick: sigform chat, dev split
    python -m benchmarks.real_suite --adapter json,xml --task invoice --show-failures
    python -m benchmarks.real_suite --dspy json --grammar --split test
    python -m benchmarks.real_suite --dspy xml,xml@text --adapter xml@text,xml@chat   # XML vs DSPy's XML
    python -m benchmarks.real_suite --adapter auto,auto@chat --completion   # base-model modes
    python -m benchmarks.real_suite --split test                      # every program (the results table)

Without ``--adapter``, ``--dspy`` or ``--grammar`` every program runs. The default split is
``dev`` (tune on it); ``test`` is held out. ``--api-base`` uses a running OpenAI-compatible server
instead of starting the embedded model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.real_suite import report
from benchmarks.real_suite.run import ALL_PROGRAMS, DSPY_ADAPTERS, MAX_TOKENS, run_all
from benchmarks.real_suite.sigform_side import ADAPTERS
from benchmarks.real_suite.tasks import SPLITS, select

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _names(value: str | None, choices: tuple[str, ...]) -> list[str]:
    if value is None:
        return []
    return list(choices) if value == "all" else value.split(",")


def programs_of(args: argparse.Namespace) -> list[str]:
    chosen = [f"sigform:{a}" for a in _names(args.adapter, ADAPTERS)]
    if args.grammar:
        chosen.append("grammar")
    if args.completion:
        chosen.append("completion")
    chosen += [f"dspy:{a}" for a in _names(args.dspy, DSPY_ADAPTERS)]
    return chosen or list(ALL_PROGRAMS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.real_suite", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--adapter", help=f"sigform adapters, comma-separated or 'all' ({', '.join(ADAPTERS)})"
    )
    parser.add_argument(
        "--dspy",
        help=f"DSPy adapters, comma-separated or 'all' ({', '.join(DSPY_ADAPTERS)}; "
        "<adapter>@text: DSPy's model_type='text' LM)",
    )
    parser.add_argument("--grammar", action="store_true", help="the 40-line few-shot + schema-grammar script")
    parser.add_argument(
        "--completion", action="store_true", help="the 40-line plain-text completion + grammar script"
    )
    parser.add_argument("--task", help="comma-separated tasks (default: all)")
    parser.add_argument(
        "--split", choices=SPLITS, default="dev", help="dev (default; tune here) or test (held out)"
    )
    parser.add_argument("--limit", type=int, help="the first N examples of each task")
    parser.add_argument("--api-base", help="an OpenAI-compatible server (default: start the embedded model)")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument(
        "--show-failures", action="store_true", help="list the examples each program got wrong"
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="run the programs example by example, each in turn (fair timing on a shared machine)",
    )
    parser.add_argument("--out", type=Path, help="write the run as JSON (records included) to this file")
    parser.add_argument(
        "--merge", type=Path, nargs="+", help="combine runs saved with --out (one program each) into --out"
    )
    args = parser.parse_args(argv)
    if args.merge:
        run = report.merge([json.loads(path.read_text(encoding="utf-8")) for path in args.merge])
        if args.out:
            args.out.with_suffix(".md").write_text(report.markdown(run), encoding="utf-8")
    else:
        run = run_all(
            programs_of(args),
            select(args.task),
            split=args.split,
            limit=args.limit,
            api_base=args.api_base,
            max_tokens=args.max_tokens,
            log=lambda msg: print(msg, file=sys.stderr, flush=True),
            interleave=args.interleave,
        )
    print(report.markdown(run))
    if args.show_failures:
        print(report.failures(run))
    out = args.out or RESULTS / "partial" / f"real_suite-{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
