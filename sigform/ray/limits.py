"""Rate limits shared by every Ray worker: one :class:`~sigform.lm.rate_limit.TokenBucket` in an actor.

:func:`shared_limit` starts a small actor (no CPU reserved) holding the bucket;
:class:`SharedRateLimit` is the handle workers put on their LMs (``lm.rate_limit``). It speaks
the :class:`~sigform.lm.rate_limit.RateLimiter` protocol: each request books its slot with one
actor call (``await``-ed on the worker's event loop, never blocking it), and a 429's Retry-After
reported by any worker pauses the bucket for all of them. The actor answers with the slot as a
wall-clock time, not a duration: a reply delayed on its way back (a busy machine) would otherwise
shift the send and let two slots go out together. Workers on other machines rely on their clocks
agreeing (NTP keeps them within milliseconds); a worker that gets its answer after the slot passed
books a new one (see :data:`sigform.lm.rate_limit.LATE`).
"""

from __future__ import annotations

import time
from typing import Any

from sigform.lm.rate_limit import TokenBucket

__all__ = ["SharedRateLimit", "shared_limit"]


class _BucketActor:
    """The actor's body: a plain token bucket (calls are served one at a time)."""

    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self.bucket = TokenBucket(rpm, tpm)

    def reserve_at(self, requests: int, tokens: int) -> float:
        """The booked slot as a wall-clock time (the answer's trip back would shift a duration)."""
        return time.time() + self.bucket.reserve(requests, tokens)

    def report_retry_after(self, seconds: float) -> None:
        self.bucket.report_retry_after(seconds)

    def totals(self) -> dict[str, float]:
        return {"requests": self.bucket.requests, "tokens": self.bucket.tokens, "waited": self.bucket.waited}


class SharedRateLimit:
    """A :class:`~sigform.lm.rate_limit.RateLimiter` whose bucket lives in a Ray actor."""

    def __init__(self, actor: Any, limits: dict[str, float | None]) -> None:
        self._actor = actor
        self._limits = dict(limits)

    @property
    def limits(self) -> dict[str, float | None]:
        return dict(self._limits)

    def reserve(self, requests: int, tokens: int) -> float:
        import ray

        return float(ray.get(self._actor.reserve_at.remote(requests, tokens))) - time.time()

    async def areserve(self, requests: int, tokens: int) -> float:
        return float(await self._actor.reserve_at.remote(requests, tokens)) - time.time()

    def report_retry_after(self, seconds: float) -> None:
        self._actor.report_retry_after.remote(seconds)  # no need to wait: the next booking sees it

    def totals(self) -> dict[str, float]:
        """Requests and estimated tokens booked so far, and the seconds of waiting handed out."""
        import ray

        return dict(ray.get(self._actor.totals.remote()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self._limits.items() if v is not None)
        return f"SharedRateLimit({shown})"


def shared_limit(rpm: float | None = None, tpm: float | None = None) -> SharedRateLimit:
    """Start the actor for one limit (needs ``ray.init()`` first) and return its handle."""
    import ray

    TokenBucket(rpm, tpm)  # refuse bad limits here, with the same message as sf.LM
    actor: object = ray.remote(num_cpus=0)(_BucketActor).remote(rpm, tpm)
    return SharedRateLimit(actor, {"rpm": rpm, "tpm": tpm})
