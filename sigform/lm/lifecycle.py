"""One LM call from its prepared request to its recorded outcome: the lifecycle every path shares.

:meth:`sigform.LM.prepare` checks and builds the request without any I/O and returns a
:class:`Call`. Whatever sends it -- a plain call or a stream, sync or async -- then

1. calls :meth:`Call.before`: the ``request`` hooks (which may veto it or add headers), then the
   response cache; a hit is the answer and the call ends with ``done(..., cache_hit=True)``;
2. sends :attr:`Call.request` through ``call.route.backend`` (retries: :class:`~sigform.lm.retry.Attempts`);
3. ends with exactly one of :meth:`Call.done` (cache write, usage, stats, history, ``response``
   hooks) or :meth:`Call.failed` (stats, history, ``error`` hooks).

:meth:`Call.run` and :meth:`Call.arun` are that whole sequence for a plain call. ``n > 1`` is one
request when the provider supports ``n``; otherwise (or when a server returns fewer choices than
asked, as some OpenAI-compatible servers do) the missing candidates come from concurrent single
requests - threads for sync calls, tasks for async ones (:func:`top_up`). The request is never
changed otherwise (no hidden temperature tweaks).

:class:`Ledger` is what an LM keeps about its calls: usage totals, counts and the history.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sigform import hooks, runtime
from sigform.errors import LMError, ProviderError
from sigform.lm.cache import get_cache, scoped_key
from sigform.lm.credentials import is_secret_header, redact_url
from sigform.lm.history import HistoryEntry, active_report, record
from sigform.lm.interface import Completion, Usage
from sigform.lm.request import Request
from sigform.lm.response import parse_choices, parse_usage
from sigform.lm.retry import Attempts, RetryPolicy
from sigform.lm.routing import Route, explained, rebased
from sigform.lm.streaming import StreamAccumulator

if TYPE_CHECKING:
    from sigform.lm.model import LM


class Ledger:
    """An LM's account of its calls: usage of provider calls (cache hits excluded), counts of
    calls, cache hits and errors, and the last ``history_size`` history entries."""

    def __init__(self, history_size: int) -> None:
        self.history: deque[HistoryEntry] = deque(maxlen=history_size)
        self.usage = Usage()
        self.stats: dict[str, int] = {"calls": 0, "cache_hits": 0, "errors": 0}
        self._lock = threading.Lock()

    def finished(self, usage: Usage, cache_hit: bool) -> None:
        with self._lock:
            self.stats["calls"] += 1
            if cache_hit:
                self.stats["cache_hits"] += 1
            else:
                self.usage = self.usage + usage

    def errored(self) -> None:
        with self._lock:
            self.stats["errors"] += 1


@dataclass(eq=False, slots=True)
class Call:
    """One prepared call of ``lm`` (see the module docstring). ``request`` is what will be sent
    (credentials unresolved until sent), ``n`` the candidates asked for, ``key`` the response-cache
    key (None: not cached), ``policy`` the retry policy and ``started`` when the call began."""

    lm: LM
    route: Route
    request: Request
    n: int
    key: str | None
    policy: RetryPolicy
    ledger: Ledger
    started: float = field(default_factory=time.perf_counter)

    def before(self) -> list[Completion] | None:
        """Emit the ``request`` event (it may veto the call or add headers); return the cached
        completions on a cache hit, else None."""
        req = self.request
        if hooks.active_callbacks(self.lm.options.callbacks):  # else nobody listens: no event to build
            self._request_event(req)
        if self.key is None:
            return None
        cache = get_cache()
        self.key = scoped_key(self.key, req, cache)  # after the hooks: their headers count too
        if self.key is None:
            return None
        hit = cache.get(self.key, self.n)
        if hit is None:
            return None
        return [replace(c, usage=replace(c.usage, cache_hit=True)) for c in hit]

    def _request_event(self, req: Request) -> None:
        """The ``request`` event; headers a hook adds or changes go into ``req``. Hooks see
        credential headers masked; only what they add or change is sent."""
        shown = {k: "***" if is_secret_header(k) else v for k, v in req.headers.items()}
        event = hooks.emit(
            "request",
            callbacks=self.lm.options.callbacks,
            lm=self.lm,
            model=self.lm.model,
            provider=req.provider,
            messages=req.messages,
            params=req.params,
            n=self.n,
            headers=dict(shown),
            backend=self.route.backend.name,
        )
        if event is not None and event.headers:
            added = {k: v for k, v in event.headers.items() if shown.get(k) != v}
            if added:
                req.headers = {**req.headers, **added}

    def run(self) -> list[Completion]:
        """The whole plain call: :meth:`before`, the ``n`` completions sent (with retries), then
        :meth:`done` or :meth:`failed`."""
        cached = self.before()
        if cached is not None:
            return self.done(cached, cache_hit=True)
        try:
            completions = _complete_n(self.route, self.request, self.n, self.policy, self.lm.model)
        except LMError as exc:
            self.failed(exc)
            raise
        return self.done(completions)

    async def arun(self) -> list[Completion]:
        """Async :meth:`run` (native async I/O, no thread per call)."""
        cached = self.before()
        if cached is not None:
            return self.done(cached, cache_hit=True)
        try:
            completions = await _acomplete_n(self.route, self.request, self.n, self.policy, self.lm.model)
        except LMError as exc:
            self.failed(exc)
            raise
        return self.done(completions)

    def done(self, completions: list[Completion], *, cache_hit: bool = False) -> list[Completion]:
        """Record the answer (and cache it unless it came from the cache); returns it."""
        latency = time.perf_counter() - self.started
        if not cache_hit and self.key is not None:
            get_cache().set(self.key, completions)
        usage = completions[0].usage if completions else Usage(cache_hit=cache_hit)
        self.ledger.finished(usage, cache_hit)
        req = self.request
        params = {**req.params, "n": self.n} if self.n != 1 else dict(req.params)
        self._record(latency, params=params, completions=completions, usage=usage, cache_hit=cache_hit)
        self._emit("response", completions=completions, usage=usage, cache_hit=cache_hit, latency=latency)
        return completions

    def failed(self, error: BaseException) -> None:
        """Record that the call failed with ``error`` (the caller raises it)."""
        latency = time.perf_counter() - self.started
        self.ledger.errored()
        req = self.request
        self._record(
            latency,
            params=dict(req.params),
            completions=[],
            usage=Usage(),
            cache_hit=False,
            error=f"{type(error).__name__}: {error}",
        )
        self._emit("error", error=error, latency=latency)

    def _emit(self, event: str, **payload: object) -> None:
        callbacks = self.lm.options.callbacks
        if not hooks.active_callbacks(callbacks):
            return  # nobody listens: skip building the event
        req = self.request
        hooks.emit(
            event,
            callbacks=callbacks,
            lm=self.lm,
            model=self.lm.model,
            provider=req.provider,
            messages=req.messages,
            params=req.params,
            **payload,
        )

    def accumulator(self) -> StreamAccumulator:
        """A fresh accumulator for one streamed attempt."""
        return StreamAccumulator(model=self.route.model, provider=self.route.provider)

    def _record(
        self,
        latency: float,
        *,
        params: dict[str, Any],
        completions: list[Completion],
        usage: Usage,
        cache_hit: bool,
        error: str | None = None,
    ) -> None:
        """One history entry for a finished or failed call (secrets never reach ``params``)."""
        req = self.request
        entry = HistoryEntry(
            model=self.lm.model,
            provider=req.provider,
            messages=[dict(m) for m in req.messages],
            params=params,
            completions=completions,
            usage=usage,
            cache_hit=cache_hit,
            latency=latency,
            backend=self.route.backend.name,
            error=error,
            api_base=redact_url(req.api_base) if req.api_base else req.api_base,
            prune_report=active_report(),
            prompt=req.prompt,
        )
        record(entry, self.ledger.history)


# -- sending: retries around each attempt, and ``n`` candidates --------------------------------

Parsed = tuple[list[Completion], Usage]


def _attempt_sync(route: Route, req: Request, policy: RetryPolicy, label: str) -> Parsed:
    attempts: Attempts | None = None  # made at the first failure: most calls succeed at once
    while True:
        try:  # parsed inside the retry loop: a malformed 200 is retried like a 5xx
            return _parse(route, route.backend.complete(req))
        except Exception as exc:
            attempts = attempts or Attempts(policy, label)
            wait = attempts.failed(exc, req.known_secrets())
        if wait is None:
            raise explained(route, attempts.error)  # outside the except block (see Attempts)
        time.sleep(wait)
        req = rebased(route, req)


async def _attempt_async(route: Route, req: Request, policy: RetryPolicy, label: str) -> Parsed:
    attempts: Attempts | None = None
    while True:
        try:
            return _parse(route, await route.backend.acomplete(req))
        except Exception as exc:
            attempts = attempts or Attempts(policy, label)
            wait = attempts.failed(exc, req.known_secrets())
        if wait is None:
            raise explained(route, attempts.error)
        await asyncio.sleep(wait)
        req = rebased(route, req)


def _parse(route: Route, result: tuple[dict[str, Any], float | None]) -> Parsed:
    body, cost = result
    usage = parse_usage(body.get("usage"), cost)
    return parse_choices(body, model=route.model, provider=route.provider, usage=usage), usage


def _merge(parts: list[tuple[list[Completion], Usage]], n: int, label: str) -> list[Completion]:
    completions = [c for comps, _ in parts for c in comps][:n]
    if not completions:
        raise ProviderError(f"{label}: the provider returned no choices", model=label)
    if len(parts) == 1:
        return completions
    total = Usage()
    for _, usage in parts:
        total = total + usage
    return [replace(c, usage=total) for c in completions]


def _complete_n(route: Route, req: Request, n: int, policy: RetryPolicy, label: str) -> list[Completion]:
    """``n`` completions for ``req`` (sync)."""
    parts = [_attempt_sync(route, req.with_n(n), policy, label)] if n == 1 or route.supports_n else []
    missing = n - sum(len(c) for c, _ in parts)
    if missing > 0:
        parts += _singles(route, req, missing, policy, label)
    return _merge(parts, n, label)


async def _acomplete_n(
    route: Route, req: Request, n: int, policy: RetryPolicy, label: str
) -> list[Completion]:
    """``n`` completions for ``req`` (async, concurrent requests when needed)."""
    one = n == 1 or route.supports_n
    parts = [await _attempt_async(route, req.with_n(n), policy, label)] if one else []
    missing = n - sum(len(c) for c, _ in parts)
    if missing > 0:
        parts += await _asingles(route, req, missing, policy, label)
    return _merge(parts, n, label)


def top_up(route: Route, req: Request, missing: int, policy: RetryPolicy, label: str) -> list[Completion]:
    """``missing`` more candidates for ``req`` from concurrent single-candidate requests (sync)."""
    return _merge(_singles(route, req, missing, policy, label), missing, label)


async def atop_up(
    route: Route, req: Request, missing: int, policy: RetryPolicy, label: str
) -> list[Completion]:
    """Async :func:`top_up`."""
    return _merge(await _asingles(route, req, missing, policy, label), missing, label)


def _singles(
    route: Route, req: Request, count: int, policy: RetryPolicy, label: str
) -> list[tuple[list[Completion], Usage]]:
    single = req.with_n(None)
    futures = [runtime.threads().submit(_attempt_sync, route, single, policy, label) for _ in range(count)]
    return [f.result() for f in futures]


async def _asingles(
    route: Route, req: Request, count: int, policy: RetryPolicy, label: str
) -> list[tuple[list[Completion], Usage]]:
    single = req.with_n(None)
    return list(await asyncio.gather(*(_attempt_async(route, single, policy, label) for _ in range(count))))
