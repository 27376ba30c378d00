"""Sending a request: retries around each attempt, and ``n`` candidates.

``n > 1`` is one request when the provider supports ``n``; otherwise (or when a server returns
fewer choices than asked, as some OpenAI-compatible servers do) the missing candidates come from
concurrent single requests - threads for sync calls, tasks for async ones. The request is never
changed otherwise (no hidden temperature tweaks).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from sigform import runtime
from sigform.errors import ProviderError
from sigform.lm.interface import Completion, Usage
from sigform.lm.request import Request
from sigform.lm.response import parse_choices, parse_usage
from sigform.lm.retry import Attempts, RetryPolicy
from sigform.lm.routing import Route, explained, rebased

__all__ = ["acomplete_n", "atop_up", "complete_n", "top_up"]

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
    total = Usage()
    for _, usage in parts:
        total = total + usage
    if len(parts) == 1:
        return completions
    return [replace(c, usage=total) for c in completions]


def complete_n(route: Route, req: Request, n: int, policy: RetryPolicy, label: str) -> list[Completion]:
    """``n`` completions for ``req`` (sync)."""
    parts = [_attempt_sync(route, req.with_n(n), policy, label)] if n == 1 or route.supports_n else []
    missing = n - sum(len(c) for c, _ in parts)
    if missing > 0:
        parts += _singles(route, req, missing, policy, label)
    return _merge(parts, n, label)


async def acomplete_n(
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
