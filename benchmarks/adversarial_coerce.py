"""9b. Typed-value reading of hostile text: 15 shapes x 10 types, up to 1 MB.

``adversarial_parse`` times whole completions through the adapters; this times the step after
it, ``coerce(text, annotation)``, where each typed value is cleaned (an echoed ``answer:``
label, a code fence, bullets, ``key: value`` lines, a one-key wrapper) and read. The 15 shapes
are the ones an attack on issue 27's fixes used: runs of labels, fences, blanks, newlines, tabs,
digits, quotes, braces, ``key: value`` lines. Each case runs in a forked child (so a case that
regresses to quadratic time is cut at ``--cap`` seconds and reported, not waited for) and is
reported as the median of ``--repeats`` CPU times. The README's promise: any text up to 1 MB
parses or fails in under 50 ms.

    python -m benchmarks.adversarial_coerce               # 1 MB, median of 5
    python -m benchmarks.adversarial_coerce --size 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import datetime
import enum
import os
import select
import signal
import statistics
import time
from collections.abc import Callable
from typing import Any, Literal, Optional

import pydantic

from benchmarks.common import Row, Section

TARGET_MS = 50.0


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Pair(pydantic.BaseModel):
    a: int
    b: str


TYPES: dict[str, Any] = {
    "int": int, "float": float, "bool": bool, "date": datetime.date, "Optional[int]": Optional[int],
    "Literal": Literal["yes", "no"], "Enum": Color, "list[int]": list[int],
    "dict[str,int]": dict[str, int], "model": Pair,
}

# name -> text of about ``n`` characters
SHAPES: dict[str, Callable[[int], str]] = {
    "blank-run-label": lambda n: "a" + " " * n + "b: 1",
    "label-run": lambda n: "answer: " * (n // 8) + "1",
    "fence-run": lambda n: "```\n" * (n // 4),
    "open-fence": lambda n: "```json\n" + " " * n,
    "backticks": lambda n: "`" * n,
    "colon-run": lambda n: ":" * n + "1",
    "newline-run": lambda n: "a" + "\n" * n + "b: 1",
    "digits": lambda n: "1" * n,
    "dash-list": lambda n: "- " * (n // 2),
    "kv-lines": lambda n: "k: 1\n" * (n // 5),
    "brace-run": lambda n: "{" * n,
    "bracket-run": lambda n: "[" * n,
    "quote-run": lambda n: '"' * n,
    "tabs-label": lambda n: "x" + "\t" * n + "value: 2",
    "mixed-label": lambda n: ("Answer - " + " " * 50) * (n // 60) + "3",
}


def _measure(text: str, annotation: Any, repeats: int) -> tuple[float, str]:
    from sigform.types.coercion import coerce

    times = []
    outcome = "ok"
    for _ in range(repeats):
        t0 = time.process_time()
        try:
            coerce(text, annotation, field="f")
            outcome = "ok"
        except Exception as exc:  # an error is the expected outcome on garbage
            outcome = type(exc).__name__
        times.append((time.process_time() - t0) * 1000)
    return statistics.median(times), outcome


def time_case(text: str, annotation: Any, repeats: int, cap: float) -> tuple[float, str]:
    """Median CPU ms of ``repeats`` reads in a forked child, and how they ended; a child still
    running after ``cap`` seconds is killed and reported as ``cap`` with outcome ``TIMEOUT``."""
    if not hasattr(os, "fork"):
        return _measure(text, annotation, repeats)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            ms, outcome = _measure(text, annotation, repeats)
            os.write(w, f"{ms:.3f} {outcome}".encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], cap)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            return cap * 1000, "TIMEOUT"
        ms, outcome = os.read(r, 200).decode().split(" ", 1)
        return float(ms), outcome
    finally:
        os.waitpid(pid, 0)
        os.close(r)


def run(size: int = 1_000_000, repeats: int = 5, cap: float = 10.0) -> Section:
    from sigform.types.coercion import coerce

    for annotation in TYPES.values():  # warm-up in the parent: imports and compiled plans
        try:
            coerce("1", annotation, field="f")
        except Exception:
            pass
    cases: list[tuple[float, str, str, str]] = []
    for shape, make in SHAPES.items():
        text = make(size)
        for tname, annotation in TYPES.items():
            ms, outcome = time_case(text, annotation, repeats, cap)
            cases.append((ms, shape, tname, outcome))
    cases.sort(reverse=True)
    over = [c for c in cases if c[0] > TARGET_MS]
    section = Section("adversarial_coerce")
    label = f"{size // 1000} KB" if size >= 1000 else f"{size} chars"
    section.rows.append(Row(
        "9b typed values", f"{label}: cases over {TARGET_MS:g} ms (of {len(cases)})", "cases", len(over),
        target="0", met=not over,
    ))
    worst = cases[0]
    section.rows.append(Row(
        "9b typed values", f"{label}: slowest case", "ms", round(worst[0], 2),
        target=f"<= {TARGET_MS:g} ms", met=worst[0] <= TARGET_MS,
        note=f"{worst[1]} as {worst[2]}: {worst[3]}",
    ))
    section.details = {
        "size": size, "repeats": repeats, "clock": "process CPU time, median of repeats",
        "cases": [{"ms": round(ms, 3), "shape": s, "type": t, "outcome": o} for ms, s, t, o in cases],
    }
    return section


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cap", type=float, default=10.0, help="seconds before a case is cut")
    parser.add_argument("--show", type=int, default=15, help="how many of the slowest cases to print")
    args = parser.parse_args()
    section = run(args.size, args.repeats, args.cap)
    cases = section.details["cases"]
    over = sum(c["ms"] > TARGET_MS for c in cases)
    print(f"size {args.size:,} chars, median of {args.repeats}: "
          f"{over} of {len(cases)} cases over {TARGET_MS:g} ms")
    for c in cases[: args.show]:
        print(f"  {c['ms']:9.1f} ms  {c['shape']:16} {c['type']:14} {c['outcome']}")


if __name__ == "__main__":
    main()
