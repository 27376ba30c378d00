"""The ``sigform`` command line: ``sigform demo`` runs a few-shot typed program end to end."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sigform", description="Typed signatures in, validated values out.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run a few-shot typed extraction program (the embedded local model by default)",
        description=(
            "Extract typed expense records (payee, amount, date, category) from short texts with a "
            "few-shot program, compare them with the labels and print accuracy, tokens and time."
        ),
    )
    demo.add_argument(
        "--adapter", choices=["auto", "chat", "json", "xml", "two-step"], default="auto",
        help="how the model is asked to answer (default: auto, grammar-constrained JSON where the "
        "model allows it, else chat sections)",
    )
    demo.add_argument("--model", default="local", help="any litellm model name (default: the embedded model)")
    demo.add_argument("--show-prompt", action="store_true", help="print the exact messages of one call")
    demo.add_argument("--limit", type=_positive, default=None,
                      help="run only the first N examples (default: all)")
    demo.add_argument("--threads", type=_positive, default=1, help="examples in flight at once (default: 1)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sigform`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from sigform.cli.demo import run_demo

        return run_demo(
            adapter=args.adapter,
            model=args.model,
            show_prompt=args.show_prompt,
            limit=args.limit,
            threads=args.threads,
        )
    return 2  # pragma: no cover - argparse rejects unknown commands first


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
