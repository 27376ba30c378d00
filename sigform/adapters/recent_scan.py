"""The result of the last scan of a text, reused when the same text is scanned again.

One ``Predict`` call can parse one answer twice: the Chat adapter reads it, finds no header, tries
its other formats, and when the structure is wrong its JSON fallback asks again; a model that
repeats itself (or a test LM) sends the same text, and the JSON and XML scans run again on it.
Those scans are pure functions of the text, so the last result per scan is kept and returned when
the text is equal (a 1 MB comparison is a memcmp, far cheaper than a scan). One entry per scan:
the memory held is the last completion and its scan result, nothing grows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["RecentScan", "RecentText", "forget_recent_scans"]

T = TypeVar("T")
_ALL: list[RecentScan[object] | RecentText] = []  # every instance (module-level: a fixed few)


def forget_recent_scans() -> None:
    """Drop every remembered result (benchmarks time cold scans with this)."""
    for recent in _ALL:
        recent._last = None


class RecentScan(Generic[T]):
    """``scan(text)`` with the last text and result remembered; results must not be mutated."""

    __slots__ = ("_last", "_scan")

    def __init__(self, scan: Callable[[str], T]) -> None:
        self._scan = scan
        self._last: tuple[str, T] | None = None
        _ALL.append(self)  # type: ignore[arg-type]

    def __call__(self, text: str) -> T:
        last = self._last  # one read: another thread may replace it, never half of it
        if last is not None and (last[0] is text or last[0] == text):
            return last[1]
        result = self._scan(text)
        self._last = (text, result)
        return result


class RecentText:
    """One remembered text (the last one a check failed on): ``text in recent``, ``remember(text)``."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: str | None = None
        _ALL.append(self)

    def __contains__(self, text: str) -> bool:
        last = self._last
        return last is not None and (last is text or last == text)

    def remember(self, text: str) -> None:
        self._last = text
