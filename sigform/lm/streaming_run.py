"""Driving a streamed call: hooks, cache, retries before the first piece, history.

A failure after pieces were already yielded is not retried (a retry would repeat them).
A cache hit is replayed as one piece per candidate and field. The call is written once, as a
plan without I/O (:func:`_plan`); the sync and async drivers only answer its requests for I/O.

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
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass, replace
from typing import Any

from sigform.errors import ProviderError
from sigform.lm.interface import Completion
from sigform.lm.lifecycle import Call, atop_up, top_up
from sigform.lm.request import Request
from sigform.lm.retry import Attempts
from sigform.lm.routing import explained, rebased
from sigform.lm.streaming import StreamAccumulator, StreamDelta


def _replay(completions: list[Completion], start: int = 0) -> Iterator[StreamDelta]:
    for i, c in enumerate(completions, start):
        if c.reasoning:
            yield StreamDelta("reasoning", c.reasoning, i)
        if c.text:
            yield StreamDelta("text", c.text, i)
        for t, call in enumerate(c.tool_calls):
            args = call.arguments if isinstance(call.arguments, str) else _json(call.arguments)
            yield StreamDelta("tool_call", args, i, t, call.id, call.name)


def _json(value: object) -> str:
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


@dataclass(frozen=True)
class _Open:
    """Open a stream for ``request`` (answered with nothing, or the error opening raised)."""

    request: Request


@dataclass(frozen=True)
class _Pull:
    """The open stream's next chunk (answered with a chunk, :data:`_END`, or the error)."""


@dataclass(frozen=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True)
class _TopUp:
    """``missing`` more candidates by plain requests (answered with them, or the error)."""

    request: Request
    missing: int


_PULL = _Pull()
_END: Any = object()
Step = StreamDelta | list[Completion] | _Open | _Pull | _Sleep | _TopUp


def _plan(call: Call) -> Generator[Step, Any, None]:
    """The streamed call, written once without I/O: yields the pieces and the final list for the
    caller and asks its driver (sync or async) for I/O with :class:`_Open`, :class:`_Pull`,
    :class:`_Sleep` and :class:`_TopUp`, which the driver answers by ``send`` or ``throw``."""
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
            yield _Open(req)
            while (chunk := (yield _PULL)) is not _END:
                for delta in acc.feed(chunk):
                    yielded = True
                    yield delta
            break
        except Exception as exc:
            wait = attempts.failed(exc, req.known_secrets(), repeatable=not yielded)
        if wait is None:
            failure = explained(call.route, attempts.error)
            break
        yield _Sleep(wait)
        req = rebased(call.route, req)
    completions: list[Completion] = []
    if failure is None:
        try:
            completions, missing = _streamed(call, acc)
            if missing:
                extra = yield _TopUp(req, missing)
                yield from _replay(extra, len(completions))
                completions = _joined(completions, extra)
        except Exception as exc:  # already a mapped sigform error
            failure = exc
    if failure is not None:
        call.failed(failure)
        raise failure  # outside the except block: no secret-bearing context
    yield call.done(completions)


class _Stepper:
    """Steps a :func:`_plan`: :meth:`next` sends the last answer (or throws the last error) in."""

    __slots__ = ("answer", "error", "plan")

    def __init__(self, plan: Generator[Step, Any, None]) -> None:
        self.plan = plan
        self.answer: Any = None
        self.error: Exception | None = None

    def next(self) -> Step | None:
        """The plan's next step; None once it has finished."""
        answer, error = self.answer, self.error
        self.answer = self.error = None
        try:
            return self.plan.throw(error) if error is not None else self.plan.send(answer)
        except StopIteration:
            return None


def run_stream(call: Call) -> Iterator[StreamDelta | list[Completion]]:
    """Drive the prepared ``call`` as a stream (see the module docstring)."""
    steps = _Stepper(_plan(call))
    chunks: Iterator[dict[str, Any]] = iter(())
    try:
        while (step := steps.next()) is not None:
            if isinstance(step, (StreamDelta, list)):
                yield step
                continue
            try:
                if isinstance(step, _Open):
                    _close(chunks)
                    chunks = iter(call.route.backend.stream(step.request))
                elif isinstance(step, _Pull):
                    steps.answer = next(chunks, _END)
                elif isinstance(step, _Sleep):
                    time.sleep(step.seconds)
                else:
                    route, policy = call.route, call.policy
                    steps.answer = top_up(route, step.request, step.missing, policy, call.lm.model)
            except Exception as exc:
                steps.error = exc
    finally:
        # a stream left unread (a bad chunk, a retry, the caller stopping) gives its client back
        # now: left to the garbage collector, its release could run inside the pool's own lock
        _close(chunks)


def _close(chunks: object) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


async def arun_stream(call: Call) -> AsyncIterator[StreamDelta | list[Completion]]:
    """Async :func:`run_stream`: the same plan, with async I/O."""
    steps = _Stepper(_plan(call))
    chunks: AsyncIterator[dict[str, Any]] | None = None
    try:
        while (step := steps.next()) is not None:
            if isinstance(step, (StreamDelta, list)):
                yield step
                continue
            try:
                if isinstance(step, _Open):
                    await _aclose(chunks)
                    chunks = aiter(call.route.backend.astream(step.request))
                elif isinstance(step, _Pull):
                    assert chunks is not None
                    steps.answer = await anext(chunks, _END)
                elif isinstance(step, _Sleep):
                    await asyncio.sleep(step.seconds)
                else:
                    route, policy, model = call.route, call.policy, call.lm.model
                    steps.answer = await atop_up(route, step.request, step.missing, policy, model)
            except Exception as exc:
                steps.error = exc
    finally:
        await _aclose(chunks)  # as in run_stream: an unread stream gives its client back now


async def _aclose(chunks: object) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
