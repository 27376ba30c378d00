"""How typed sigform is inside: ``Any`` per 1,000 lines of ``sigform/`` (issue 25).

Counts the word ``Any`` in every ``sigform/**/*.py`` (imports, annotations, comments: what a
reader meets) per 1,000 lines. For scale: DSPy 26, httpx 8.6 by the same count (issue 25).
Printed, never asserted: ``python -m benchmarks.any_density`` (tests/test_typing.py runs it too).
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sigform"
_ANY = re.compile(r"\bAny\b")


def any_density(package: Path = PACKAGE) -> tuple[int, int, float]:
    """``(count of Any, lines, count per 1,000 lines)`` over the package's Python files."""
    count = lines = 0
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        count += len(_ANY.findall(text))
        lines += text.count("\n")
    return count, lines, 1000 * count / max(lines, 1)


def main() -> None:
    count, lines, density = any_density()
    print(f"Any in sigform/: {count} in {lines} lines = {density:.1f} per 1,000 lines (DSPy: 26)")


if __name__ == "__main__":
    main()
