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
from sigform.lm.errors_map import map_exception
from sigform.lm.interface import Completion
from sigform.lm.routing import explained, rebased
from sigform.lm.streaming import StreamDelta

if TYPE_CHECKING:
    from sigform.lm.model import LM, _Prepared

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


def _finish(lm: LM, prep: _Prepared, completions: list[Completion], started: float) -> list[Completion]:
    lm._done(prep, completions, started, cache_hit=False)
    return completions


def _streamed(lm: LM, prep: _Prepared, acc: Any) -> tuple[list[Completion], int]:
    """The stream's candidates (at most ``n``) and how many more are needed."""
    completions = acc.completions()[: prep.n]
    if not completions:
        raise ProviderError(f"{lm.model}: the provider streamed no choices", model=lm.model)
    return completions, prep.n - len(completions)


def _joined(streamed: list[Completion], extra: list[Completion]) -> list[Completion]:
    """Stream and top-up candidates as one answer, each carrying the usage of all requests."""
    total = streamed[0].usage + extra[0].usage
    return [replace(c, usage=total) for c in (*streamed, *extra)]


def _stream_request(prep: _Prepared) -> Any:
    # n only where the provider takes it; the rest is topped up after the stream
    return prep.request.with_n(prep.n if prep.route.supports_n else None)


def run_stream(lm: LM, messages: Any, kwargs: dict[str, Any]) -> Iterator[StreamDelta | list[Completion]]:
    started = time.perf_counter()
    prep = lm._prepare(messages, kwargs)  # invalid settings fail here, before any I/O

    def gen() -> Iterator[StreamDelta | list[Completion]]:
        cached = lm._before(prep)
        if cached is not None:
            yield from _replay(cached)
            lm._done(prep, cached, started, cache_hit=True)
            yield cached
            return
        req = _stream_request(prep)
        attempt = 0
        failure: BaseException | None = None
        while True:
            acc = lm._accumulator(prep)
            yielded = False
            try:
                for chunk in prep.route.backend.stream(req):
                    for delta in acc.feed(chunk):
                        yielded = True
                        yield delta
                break
            except Exception as exc:
                err = map_exception(exc, model=lm.model, secrets=req.known_secrets())
                if err is exc:
                    raise
                if yielded or not prep.policy.should_retry(err, attempt):
                    failure = explained(prep.route, err)
                    break
            time.sleep(prep.policy.delay(err, attempt))
            attempt += 1
            req = rebased(prep.route, req)
        if failure is None:
            try:
                completions, missing = _streamed(lm, prep, acc)
                if missing:
                    extra = calls.top_up(prep.route, req, missing, prep.policy, lm.model)
                    yield from _replay(extra, len(completions))
                    completions = _joined(completions, extra)
            except Exception as exc:  # already a mapped sigform error
                failure = exc
        if failure is not None:
            lm._failed(prep, failure, started)
            raise failure  # outside the except block: no secret-bearing context
        yield _finish(lm, prep, completions, started)

    return gen()


def arun_stream(
    lm: LM, messages: Any, kwargs: dict[str, Any]
) -> AsyncIterator[StreamDelta | list[Completion]]:
    started = time.perf_counter()
    prep = lm._prepare(messages, kwargs)

    async def gen() -> AsyncIterator[StreamDelta | list[Completion]]:
        cached = lm._before(prep)
        if cached is not None:
            for delta in _replay(cached):
                yield delta
            lm._done(prep, cached, started, cache_hit=True)
            yield cached
            return
        req = _stream_request(prep)
        attempt = 0
        failure: BaseException | None = None
        while True:
            acc = lm._accumulator(prep)
            yielded = False
            try:
                async for chunk in prep.route.backend.astream(req):
                    for delta in acc.feed(chunk):
                        yielded = True
                        yield delta
                break
            except Exception as exc:
                err = map_exception(exc, model=lm.model, secrets=req.known_secrets())
                if err is exc:
                    raise
                if yielded or not prep.policy.should_retry(err, attempt):
                    failure = explained(prep.route, err)
                    break
            await asyncio.sleep(prep.policy.delay(err, attempt))
            attempt += 1
            req = rebased(prep.route, req)
        completions: list[Completion] = []
        if failure is None:
            try:
                completions, missing = _streamed(lm, prep, acc)
                if missing:
                    extra = await calls.atop_up(prep.route, req, missing, prep.policy, lm.model)
                    for delta in _replay(extra, len(completions)):
                        yield delta
                    completions = _joined(completions, extra)
            except Exception as exc:  # already a mapped sigform error
                failure = exc
        if failure is not None:
            lm._failed(prep, failure, started)
            raise failure  # outside the except block: no secret-bearing context
        yield _finish(lm, prep, completions, started)

    return gen()
