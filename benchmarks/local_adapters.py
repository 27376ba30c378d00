"""The demo task on the embedded local model, once per adapter.

Prints, for each adapter: field accuracy, exact records, parse-failure rate, generated tokens
per example (every attempt, re-asks included) and seconds per example. Run with
``python benchmarks/local_adapters.py [--limit N] [--adapters chat,json,...]``; it starts the
local server if none is running.
"""

from __future__ import annotations

import argparse

from sigform.cli.demo import evaluate

ADAPTERS = ("auto", "chat", "json", "xml", "two-step")


def measure(adapters: tuple[str, ...] = ADAPTERS, limit: int | None = None) -> list[dict[str, float | str]]:
    """One row of figures per adapter (the first, warm-up call is part of the chat run)."""
    rows: list[dict[str, float | str]] = []
    for name in adapters:
        report = evaluate(adapter=name, limit=limit, progress=False)
        n = max(len(report.examples), 1)
        rows.append(
            {
                "adapter": name,
                "examples": len(report.examples),
                "field_accuracy": round(report.accuracy, 3),
                "exact_records": round(report.exact / n, 3),
                "parse_failure_rate": round(report.parse_failure_rate, 3),
                "tokens_per_example": round(report.completion_tokens / n, 1),
                "seconds_per_example": round(report.seconds / n, 2),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    args = parser.parse_args()
    rows = measure(tuple(args.adapters.split(",")), args.limit)
    header = list(rows[0])
    print(" | ".join(f"{h:>20}" for h in header))
    for row in rows:
        print(" | ".join(f"{row[h]!s:>20}" for h in header))


if __name__ == "__main__":
    main()
