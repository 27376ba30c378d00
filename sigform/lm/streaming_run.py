"""Driving a streamed call: hooks, cache, retries before the first piece, history.

A failure after pieces were already yielded is not retried (a retry would repeat them).
A cache hit is replayed as one piece per candidate and field.

``n > 1`` streams every candidate the provider streams in one request (``n`` is sent only where
the provider supports it). Candidates still missing when the stream ends - the provider takes no
``n``, or streamed fewer choices than asked - are topped up like a plain call's: concurrent
single-candidate requests, not streamed, each reported whole (one piece per field, with its own
``index``) before the final list. Their usage is added to the stream's; the ``n`` candidates are
cached together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sigform.errors import ProviderError
from sigform.lm import calls
from sigform.lm.interface import Completion
from sigform.lm.request import Request
from sigform.lm.retry import Attempts
from sigform.lm.routing import explained, rebased
from sigform.lm.streaming import StreamAccumulator, StreamDelta

if TYPE_CHECKING:
    from sigform.lm.lifecycle import Call

__all__ = ["arun_stream", "run_stream"]


def _replay(completions: list[Completion], start: int = 0) -> Iterator[StreamDelta]:
    for i, c in enumerate(completions, start):
        if c.reasoning:
            yield StreamDelta("reasoning", c.reasoning, i)
        if c.text:
            yield StreamDelta("text", c.text, i)
        for t, call in enumerate(c.tool_calls):
            args = call.arguments if isinstance(call.arguments, str) else _json(call.arguments)
            yield StreamDelta("tool_call", args, i, t, call.id, call.name)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def _streamed(call: Call, acc: StreamAccumulator) -> tuple[list[Completion], int]:
    """The stream's candidates (at most ``n``) and how many more are needed."""
    completions = acc.completions()[: call.n]
    if not completions:
        model = call.lm.model
        raise ProviderError(f"{model}: the provider streamed no choices", model=model)
    return completions, call.n - len(completions)


def _joined(streamed: list[Completion], extra: list[Completion]) -> list[Completion]:
    """Stream and top-up candidates as one answer, each carrying the usage of all requests."""
    total = streamed[0].usage + extra[0].usage
    return [replace(c, usage=total) for c in (*streamed, *extra)]


def _stream_request(call: Call) -> Request:
    # n only where the provider takes it; the rest is topped up after the stream
    return call.request.with_n(call.n if call.route.supports_n else None)


def run_stream(call: Call) -> Iterator[StreamDelta | list[Completion]]:
    """Drive the prepared ``call`` as a stream (see the module docstring)."""
    cached = call.before()
    if cached is not None:
        yield from _replay(cached)
        yield call.done(cached, cache_hit=True)
        return
    req = _stream_request(call)
    attempts = Attempts(call.policy, call.lm.model)
    failure: BaseException | None = None
    while True:
        acc = call.accumulator()
        yielded = False
        try:
            for chunk in call.route.backend.stream(req):
                for delta in acc.feed(chunk):
                    yielded = True
                    yield delta
            break
        except Exception as exc:
            wait = attempts.failed(exc, req.known_secrets(), repeatable=not yielded)
        if wait is None:
            failure = explained(call.route, attempts.error)
            break
        time.sleep(wait)
        req = rebased(call.route, req)
    if failure is None:
        try:
            completions, missing = _streamed(call, acc)
            if missing:
                extra = calls.top_up(call.route, req, missing, call.policy, call.lm.model)
                yield from _replay(extra, len(completions))
                completions = _joined(completions, extra)
        except Exception as exc:  # already a mapped sigform error
            failure = exc
    if failure is not None:
        call.failed(failure)
        raise failure  # outside the except block: no secret-bearing context
    yield call.done(completions)


async def arun_stream(call: Call) -> AsyncIterator[StreamDelta | list[Completion]]:
    """Async :func:`run_stream`."""
    cached = call.before()
    if cached is not None:
        for delta in _replay(cached):
            yield delta
        yield call.done(cached, cache_hit=True)
        return
    req = _stream_request(call)
    attempts = Attempts(call.policy, call.lm.model)
    failure: BaseException | None = None
    while True:
        acc = call.accumulator()
        yielded = False
        try:
            async for chunk in call.route.backend.astream(req):
                for delta in acc.feed(chunk):
                    yielded = True
                    yield delta
            break
        except Exception as exc:
            wait = attempts.failed(exc, req.known_secrets(), repeatable=not yielded)
        if wait is None:
            failure = explained(call.route, attempts.error)
            break
        await asyncio.sleep(wait)
        req = rebased(call.route, req)
    completions: list[Completion] = []
    if failure is None:
        try:
            completions, missing = _streamed(call, acc)
            if missing:
                extra = await calls.atop_up(call.route, req, missing, call.policy, call.lm.model)
                for delta in _replay(extra, len(completions)):
                    yield delta
                completions = _joined(completions, extra)
        except Exception as exc:  # already a mapped sigform error
            failure = exc
    if failure is not None:
        call.failed(failure)
        raise failure  # outside the except block: no secret-bearing context
    yield call.done(completions)
