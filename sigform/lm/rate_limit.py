"""Requests-per-minute and tokens-per-minute limits: ``sf.LM(..., rpm=..., tpm=...)``.

A limiter is anything with the :class:`RateLimiter` protocol. :class:`TokenBucket` is the one
for a process; ``sigform.ray`` puts the same bucket in a Ray actor so the limit holds across
every worker. Both answer one question -- "I want to send ``requests`` requests of ``tokens``
tokens: how long must I wait?" -- and book the capacity at once, so callers only sleep (sync or
async) for the returned time: the decision is made once, in one place.

The bucket spaces requests evenly (no burst): after a request of ``k`` estimated tokens the next
may start ``1 / (rpm / 60)`` seconds later and once ``k / (tpm / 60)`` seconds of token budget
are paid back, so in any window of ``T`` seconds at most ``rpm * T / 60 + 1`` requests start.
Tokens are estimated before sending, as providers do for their own limits: the prompt's
characters / 4 plus the output limit (``max_tokens``) times the candidates asked for.

A provider's 429 with ``Retry-After`` seen by one call pauses the whole limiter
(:meth:`RateLimiter.report_retry_after`): no request starts before that time, from any caller
sharing it (at most :data:`MAX_PAUSE`, 60 s, the retry policy's cap on Retry-After). Requests
already waiting for a slot booked before the 429 still go at their time.
A caller that wakes up late for its slot (a blocked event loop, a starved thread) books a new
one instead of sending, so late sleepers never go out together as a burst.

The limit applies where requests leave: the LM wraps its route's backend (:func:`limited_route`),
so retries, ``n`` top-ups and streams are counted and cache hits are not. A backend's
``prepare`` runs before the slot is booked (see :mod:`sigform.lm.backend`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sigform import runtime
from sigform.excerpt import shorten
from sigform.lm.retry import RetryPolicy
from sigform.probes import probe

if TYPE_CHECKING:
    from sigform.lm.model import LM
    from sigform.lm.request import Request
    from sigform.lm.routing import Route


@runtime_checkable
class RateLimiter(Protocol):
    """What an LM needs from a rate limiter (local or shared across processes): ``reserve`` books
    and returns the seconds to wait (see the module docstring); a limiter that lives elsewhere may
    also have ``async def areserve(requests, tokens)``, which async calls use instead.
    ``report_retry_after`` says the provider asked everyone to wait ``seconds``. ``limits`` are
    the numbers a saved program keeps (``{"rpm": ..., "tpm": ...}``)."""

    def reserve(self, requests: int, tokens: int) -> float: ...

    def report_retry_after(self, seconds: float) -> None: ...

    @property
    def limits(self) -> dict[str, float | None]: ...


def check_rate(name: str, value: Any) -> float | None:
    """``value`` as a per-minute limit (None: no limit), or a clear error naming the setting."""
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # bounds, because a saved program's LM settings are untrusted data: a 400-digit int must not
    # raise OverflowError, and rpm=1e-9 must not make the second call wait for centuries
    low = _MIN_RATE[name]
    if not number or not low <= value <= _MAX_RATE:
        from sigform.errors import ParameterError

        raise ParameterError(
            f"{name} must be a number per minute from {low:.4g} to {_MAX_RATE:.0e} "
            f"(None: no limit), got {shorten(repr(value), 40)}; e.g. {name}=600"
        )
    return float(value)


# a request an hour; 1,000 tokens a minute (below any provider tier: a lower one would make one
# long prompt wait for days)
_MIN_RATE = {"rpm": 1 / 60, "tpm": 1000.0}
_MAX_RATE = 1e12


class TokenBucket:
    """An in-process limiter of ``rpm`` requests and ``tpm`` estimated tokens per minute.

    Thread-safe; the clock is injectable for tests. ``reserve`` never blocks: it returns the wait.
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rpm = check_rate("rpm", rpm)
        self.tpm = check_rate("tpm", tpm)
        if self.rpm is None and self.tpm is None:
            raise ValueError("a TokenBucket needs rpm= or tpm= (or both)")
        self._clock = clock
        self._lock = threading.Lock()
        self._next_request = -math.inf  # earliest start of the next request (request budget)
        self._next_tokens = -math.inf  # earliest start once the token budget is paid back
        self._paused_until = -math.inf  # a provider's Retry-After
        self.requests = 0  # booked so far (for progress reports)
        self.tokens = 0
        self.waited = 0.0  # seconds of waiting handed out
        runtime.forget_after_fork(self)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a forked child: another thread of the parent may hold it

    @property
    def limits(self) -> dict[str, float | None]:
        return {"rpm": self.rpm, "tpm": self.tpm}

    def reserve(self, requests: int = 1, tokens: int = 0) -> float:
        with self._lock:
            now = self._clock()
            start = max(now, self._next_request, self._next_tokens, self._paused_until)
            if self.rpm is not None:
                self._next_request = start + requests * 60.0 / self.rpm
            if self.tpm is not None:
                self._next_tokens = start + max(tokens, 0) * 60.0 / self.tpm
            self.requests += requests
            self.tokens += max(tokens, 0)
            self.waited += start - now
            return start - now

    def report_retry_after(self, seconds: float) -> None:
        if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
            return
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + min(float(seconds), MAX_PAUSE))

    def __repr__(self) -> str:
        return f"TokenBucket(rpm={self.rpm}, tpm={self.tpm})"

    def __reduce__(self) -> Any:
        # a copy elsewhere is a new bucket with the same limits (the lock and clock stay here);
        # for one limit across processes use sigform.ray's shared limiter
        return (TokenBucket, (self.rpm, self.tpm))


# the longest pause a provider's Retry-After imposes (the retry policy's own cap): a server or
# proxy answering "retry after 1,000 days" would otherwise hang every later call sharing the bucket
MAX_PAUSE = RetryPolicy.max_retry_after

# LMs for the same model and endpoint with the same limits share one bucket in a process
_buckets: weakref.WeakValueDictionary[tuple[Any, ...], TokenBucket] = weakref.WeakValueDictionary()
_buckets_lock = threading.Lock()


def _new_buckets_lock() -> None:
    global _buckets_lock
    _buckets_lock = threading.Lock()


runtime.on_fork(_new_buckets_lock)


def shared_bucket(identity: tuple[Any, ...], rpm: float | None, tpm: float | None) -> TokenBucket:
    """The process's bucket for ``identity`` (model, endpoint) with these limits, made once."""
    key = (*identity, rpm, tpm)
    with _buckets_lock:
        bucket = _buckets.get(key)
        if bucket is None:
            bucket = _buckets[key] = TokenBucket(rpm, tpm)
        return bucket


def estimate_tokens(req: Request) -> int:
    """Tokens a request may use, estimated before it is sent: prompt characters / 4 plus the
    output limit for every candidate asked."""
    chars = 0
    for message in req.messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, Mapping))
    params = req.params
    limit = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    n = params.get("n") or 1
    out = limit * n if isinstance(limit, int) and isinstance(n, int) else 0
    return chars // 4 + 1 + out


def _retry_after_429(exc: BaseException) -> float | None:
    """A 429's Retry-After, capped at :data:`MAX_PAUSE` (None for anything else)."""
    from sigform.lm.errors_map import retry_after_of

    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    seconds = retry_after_of(exc) if status == 429 else None
    return None if seconds is None else min(seconds, MAX_PAUSE)


async def _areserve(limiter: RateLimiter, tokens: int) -> float:
    areserve: Callable[[int, int], Awaitable[float]] | None = getattr(limiter, "areserve", None)
    return await areserve(1, tokens) if areserve is not None else limiter.reserve(1, tokens)


# a caller that wakes this much after its booked time (a blocked event loop, a starved thread)
# books again instead of sending: late sleepers waking together would otherwise go as a burst.
# So any window of T seconds sees at most rate * (T + LATE) + 1 requests start. 10 ms wasted a
# third of the slots on a busy machine (2 cores, load 20: 68 of 100 req/s); 30 ms kept 91 with
# at most 105 in any second
LATE = 0.03


def _late(
    wait: float, sleep: Callable[[float], None], clock: Callable[[], float] = time.monotonic
) -> bool:
    """Sleep ``wait`` seconds; whether the wake-up came more than :data:`LATE` too late. A wait
    below ``-LATE`` (a shared limiter's slot that had passed when its answer arrived) is late."""
    if wait <= 0:
        return wait < -LATE
    woke = clock() + wait
    sleep(wait)
    return clock() - woke > LATE


class _LimitedBackend:
    """A backend whose every request first waits for the limiter; a 429's Retry-After is reported."""

    def __init__(self, inner: Any, limiter: RateLimiter) -> None:
        self.inner = inner
        self.limiter = limiter
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @contextlib.contextmanager
    def _watching(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            seconds = _retry_after_429(exc)
            if seconds is not None:
                self.limiter.report_retry_after(seconds)
            raise

    def _turn(self, req: Request) -> None:
        prepare: Callable[[Request], None] | None = getattr(self.inner, "prepare", None)
        if prepare is not None:
            prepare(req)  # a cold client is made before the slot, not between the slot and the send
        tokens = estimate_tokens(req)
        while _late(self.limiter.reserve(1, tokens), time.sleep):
            pass

    async def _aturn(self, req: Request) -> None:
        aprepare: Callable[[Request], Awaitable[None]] | None = getattr(self.inner, "aprepare", None)
        if aprepare is not None:
            await aprepare(req)
        tokens = estimate_tokens(req)
        while True:
            wait = await _areserve(self.limiter, tokens)
            if wait <= 0:
                if wait < -LATE:
                    continue  # the slot passed while its answer travelled: book again
                return
            woke = time.monotonic() + wait
            await asyncio.sleep(wait)
            if time.monotonic() - woke <= LATE:
                return

    def complete(self, req: Request) -> Any:
        self._turn(req)
        with self._watching():
            return self.inner.complete(req)

    async def acomplete(self, req: Request) -> Any:
        await self._aturn(req)
        with self._watching():
            return await self.inner.acomplete(req)

    def stream(self, req: Request) -> Iterator[Any]:
        self._turn(req)
        with self._watching():
            yield from self.inner.stream(req)

    async def astream(self, req: Request) -> AsyncIterator[Any]:
        await self._aturn(req)
        with self._watching():
            async for chunk in self.inner.astream(req):
                yield chunk


def limited_route(route: Route, limiter: RateLimiter | None) -> Route:
    """``route`` with its backend behind ``limiter`` (the route itself when there is none)."""
    if limiter is None:
        return route
    cached = _wrapped.get(id(route))
    if cached is not None and cached[0] is route and cached[1] is limiter:
        return cached[2]
    wrapped = replace(route, backend=_LimitedBackend(route.backend, limiter))
    _wrapped[id(route)] = (route, limiter, wrapped)
    if len(_wrapped) > 256:  # routes are few; forget old ones rather than grow
        _wrapped.pop(next(iter(_wrapped)))
    return wrapped


_wrapped: dict[int, tuple[Route, RateLimiter, Route]] = {}


def check_limiter(limiter: object) -> None:
    """Refuse a ``rate_limit=`` that is not a :class:`RateLimiter`, saying what one is and that a
    number ("60", "60/min") is written as ``rpm=`` or ``tpm=`` (it may mean requests or tokens)."""
    if limiter is None or isinstance(limiter, RateLimiter):
        return
    from sigform.errors import ParameterError

    raise ParameterError(
        f"rate_limit must be a RateLimiter object (reserve(), report_retry_after(), limits), "
        f"e.g. sigform.lm.rate_limit.TokenBucket(rpm=600); got {type(limiter).__name__} "
        f"{shorten(repr(limiter), 40)}; "
        "for a per-minute limit write rpm=600 (requests) or tpm=200_000 (tokens)"
    )


def limiter_of(lm: LM) -> RateLimiter | None:
    """The limiter an LM's requests wait for: its ``rate_limit`` option, else the process's
    bucket for its model, endpoint and ``rpm``/``tpm`` (held by the LM so that it lives as long)."""
    options = lm.options
    if options.rate_limit is not None:
        return options.rate_limit  # type: ignore[no-any-return]
    if options.rpm is None and options.tpm is None:
        return None
    held: TokenBucket | None = lm.__dict__.get("_bucket")
    if held is None or held.rpm != options.rpm or held.tpm != options.tpm:
        held = shared_bucket(bucket_identity(lm), options.rpm, options.tpm)
        lm.__dict__["_bucket"] = held
    return held


def bucket_identity(lm: LM) -> tuple[str, str]:
    """The model and endpoint whose requests share one rate limit: the endpoint as cache keys
    see it (:func:`~sigform.lm.request.endpoint_identity`: ``.../v1`` and ``.../v1/`` are one)."""
    from sigform.lm.request import endpoint_identity

    base = probe("rate limit: the LM's api_base", lambda: lm.api_base, None)  # env:/cmd: resolved
    provider = lm.model.partition("/")[0] if "/" in lm.model else "openai"
    return lm.model, endpoint_identity(provider, base if isinstance(base, str) else None)
