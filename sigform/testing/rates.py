"""Measuring request rates from arrival times (``RecordedRequest.received`` of a fake provider)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["max_in_window"]


def max_in_window(times: Iterable[float], window: float) -> int:
    """The most arrivals inside any ``window`` seconds (a half-open span ``[t, t + window)``)."""
    ordered = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(ordered):
        while t - ordered[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
