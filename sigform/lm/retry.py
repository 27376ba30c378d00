"""Retry policy: only retryable failures, exponential backoff with full jitter, Retry-After honoured.

Retryable means the mapped :class:`~sigform.errors.LMError` says so: rate limits, 5xx, timeouts
and connection errors. Authentication, bad-request and context-window errors fail at once.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from sigform.errors import LMError

__all__ = ["RetryPolicy", "check_limits"]


def check_limits(*, num_retries: Any = 0, timeout: Any = None, retry_delay: Any = 0.0) -> None:
    """Refuse retry and timeout settings that cannot work (a negative timeout failed only at call
    time with a raw ValueError; negative retries were taken as none), naming the setting."""
    from sigform.lm.params import ParameterError

    if isinstance(num_retries, bool) or not isinstance(num_retries, int) or num_retries < 0:
        raise ParameterError(f"num_retries must be a whole number >= 0, got {num_retries!r}")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ParameterError(f"timeout must be a number of seconds > 0 (None: no limit), got {timeout!r}")
    if (
        isinstance(retry_delay, bool)
        or not isinstance(retry_delay, (int, float))
        or not math.isfinite(retry_delay)
        or retry_delay < 0
    ):
        raise ParameterError(f"retry_delay must be a number of seconds >= 0, got {retry_delay!r}")


@dataclass(frozen=True)
class RetryPolicy:
    """``num_retries`` extra attempts; the wait before retry ``k`` (0-based) is uniform in
    ``[0, min(max_delay, base_delay * 2**k)]`` unless the provider sent Retry-After, which wins
    (capped at ``max_retry_after``)."""

    num_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to try again after ``error`` on 0-based ``attempt``."""
        return attempt < self.num_retries and isinstance(error, LMError) and bool(error.retryable)

    def delay(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before the next attempt."""
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            return min(float(retry_after), self.max_retry_after)
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        return random.uniform(0, cap)
