"""Retry policy: only retryable failures, exponential backoff with full jitter, Retry-After honoured.

Retryable means the mapped :class:`~sigform.errors.LMError` says so: rate limits, 5xx, timeouts
and connection errors. Authentication, bad-request and context-window errors fail at once.

:class:`Attempts` applies a :class:`RetryPolicy` to one request and decides without doing any I/O:
every call path (a plain call, ``n`` top-ups, a stream; sync and async) sends, reports each failure
to it and sleeps for the delay it returns, so the rules live here once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass

from sigform.errors import LMError
from sigform.excerpt import shorten
from sigform.lm.errors_map import map_exception

# a bound, because a saved program's settings are untrusted data: with Retry-After capped at 60 s,
# 50 retries keep one call under an hour (num_retries=10**9 from a file retried without end)
MAX_RETRIES = 50


def check_limits(*, num_retries: object = 0, timeout: object = None, retry_delay: object = 0.0) -> None:
    """Refuse retry and timeout settings that cannot work (a negative timeout failed only at call
    time with a raw ValueError; negative retries were taken as none), naming the setting."""
    from sigform.lm.params import ParameterError

    if (
        isinstance(num_retries, bool)
        or not isinstance(num_retries, int)
        or not 0 <= num_retries <= MAX_RETRIES
    ):
        shown = shorten(repr(num_retries), 40)
        raise ParameterError(f"num_retries must be a whole number from 0 to {MAX_RETRIES}, got {shown}")
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


class Attempts:
    """The attempts of one request under ``policy`` (``label`` names the model in errors).

    After a failed attempt the caller calls :meth:`failed`: it gets the seconds to wait before the
    next attempt, or None when there is none, and then raises :attr:`error` -- outside its
    ``except`` block, so that the provider's exception (which may quote a secret) is neither the
    cause nor the context of the error users see."""

    __slots__ = ("error", "label", "number", "policy")
    error: BaseException  # the last failure, as users see it (set by :meth:`failed`)

    def __init__(self, policy: RetryPolicy, label: str) -> None:
        self.policy = policy
        self.label = label
        self.number = 0  # 0-based attempt being made

    def failed(self, exc: Exception, secrets: Iterable[str], *, repeatable: bool = True) -> float | None:
        """Record ``exc`` as :attr:`error` (mapped to a sigform error, ``secrets`` scrubbed) and
        return the wait before the next attempt, or None when this attempt was the last.
        ``repeatable=False``: the attempt already delivered output (a stream's pieces), which a
        retry would repeat. A sigform :class:`~sigform.errors.LMError` (a backend may raise one) is
        the provider's failure; any other exception that is no provider failure (a bug) is
        re-raised as is."""
        error = map_exception(exc, model=self.label, secrets=secrets)
        if error is exc and not isinstance(exc, LMError):
            raise exc
        self.error = error
        if not repeatable or not self.policy.should_retry(error, self.number):
            return None
        delay = self.policy.delay(error, self.number)
        self.number += 1
        return delay
