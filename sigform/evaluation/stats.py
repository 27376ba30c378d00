"""Scores with their uncertainty: a :class:`Score` is a float that carries a 95% interval.

Per-example scores that are all 0 or 1 get a Wilson score interval (right for proportions, also
near 0%, 100% and with few examples); other scores a seeded percentile bootstrap, so the same
records always give the same interval. :func:`paired_difference` compares two programs on the
same examples by resampling examples (a paired bootstrap), which is much tighter than comparing
two independent intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["Score", "paired_difference", "score_of"]

_Z95 = 1.959963984540054
_RESAMPLES = 2000
_SEED = 0


class Score(float):
    """A mean score in ``[low, high]`` (95%) over ``n`` examples; compares and formats as a float.

    ``method`` says how the interval was computed (``"Wilson"`` or ``"bootstrap"``).
    """

    low: float
    high: float
    n: int
    method: str

    def __new__(cls, value: float, low: float, high: float, n: int, method: str) -> Score:
        obj = super().__new__(cls, value)
        obj.low, obj.high, obj.n, obj.method = low, high, n, method
        return obj

    def __reduce__(self) -> tuple[type[Score], tuple[float, float, float, int, str]]:
        return (Score, (float(self), self.low, self.high, self.n, self.method))

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% interval as ``(low, high)``."""
        return (self.low, self.high)

    def percent(self, digits: int = 1) -> str:
        """``"72.0% [58.1, 83.0]"``: the score and its interval in percent."""
        if self.n == 0:
            return "n/a (no examples)"
        return f"{100 * self:.{digits}f}% [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"

    def to_dict(self) -> dict[str, float | int | str]:
        return {"value": float(self), "low": self.low, "high": self.high, "n": self.n, "method": self.method}

    def __repr__(self) -> str:
        return f"Score({float(self):.4g}, 95% [{self.low:.4g}, {self.high:.4g}], n={self.n}, {self.method})"

    __str__ = __repr__


def _wilson(successes: float, n: int) -> tuple[float, float]:
    p = successes / n
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _bootstrap(values: Sequence[float], seed: int = _SEED) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(_RESAMPLES))
    return means[int(0.025 * _RESAMPLES)], means[int(0.975 * _RESAMPLES) - 1]


def score_of(values: Sequence[float]) -> Score:
    """The mean of per-example scores with its 95% interval (Wilson for 0/1 scores, else bootstrap)."""
    n = len(values)
    if n == 0:
        return Score(math.nan, math.nan, math.nan, 0, "none")
    mean = sum(values) / n
    if all(v in (0.0, 1.0) for v in values):
        low, high = _wilson(sum(values), n)
        return Score(mean, low, high, n, "Wilson")
    low, high = _bootstrap(values)
    return Score(mean, low, high, n, "bootstrap")


def paired_difference(new: Sequence[float], old: Sequence[float]) -> Score:
    """Mean of ``new - old`` over the same examples, with a paired-bootstrap 95% interval."""
    if len(new) != len(old):
        raise ValueError(f"a paired comparison needs the same examples ({len(new)} vs {len(old)})")
    diffs = [a - b for a, b in zip(new, old, strict=True)]
    if not diffs:
        return Score(math.nan, math.nan, math.nan, 0, "none")
    low, high = _bootstrap(diffs)
    return Score(sum(diffs) / len(diffs), low, high, len(diffs), "paired bootstrap")
