"""Field-level streaming for Predict: ``program.stream(**inputs)`` / ``program.astream(...)``.

Yields :class:`StreamEvent` values -- which output field the model is writing and its text so
far -- as the answer arrives, then the final :class:`~sigform.predict.Prediction` (typed values,
parsed once the stream ends)::

    for item in qa.stream(question="Why is the sky blue?"):  # also lm=, adapter=, demos=, config=
        if isinstance(item, sf.Prediction):
            print(item.answer)
        else:
            print(item.field, item.text)

The request goes through the adapter's normal loop (``adapter.run_call`` / ``arun_call``), so value
re-asks and format fallbacks work as usual; only the first request is streamed (its candidate
0), and re-asks are plain calls. An LM without ``stream``/``astream`` is called normally and its
text is reported in one piece. ChainOfThought with native reasoning streams the provider's
reasoning as the ``reasoning`` field. The sync ``stream`` runs the request in a worker thread
(carrying settings and callbacks); leaving the loop early lets that request finish unobserved.
The program's own callbacks see the LM and adapter events of the request, as for a plain call.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, ParamSpec, TypeVar

from sigform.adapters.call_plan import AdapterCall
from sigform.adapters.fields import field_views
from sigform.adapters.stream_text import FieldProgress, GrowingText, TextAt
from sigform.hooks import emit
from sigform.lm.interface import Completion, LMProtocol
from sigform.lm.streaming import StreamDelta
from sigform.message import Message
from sigform.predict.module import (
    _call_ids,  # one counter: a call id never names two calls
    program_callbacks,
)
from sigform.signatures.prediction import Prediction

if TYPE_CHECKING:
    from sigform.adapters.base import Adapter
    from sigform.adapters.streaming import FieldDelta
    from sigform.predict.predict import Predict

__all__ = ["Overrides", "StreamEvent", "astream_predict", "stream_predict"]

# a streamed program's types: its inputs and its prediction (see Predict)
_In = ParamSpec("_In")
_Out = TypeVar("_Out", bound=Prediction)


class StreamEvent(FieldProgress):
    """Progress of one output field: ``text`` so far (it only grows), ``delta`` (what it grew by
    since the field's previous event) and ``done`` once finished.

    ``text`` is built when first read: printing the deltas of a long field costs time in
    proportion to the field, while reading every event's ``text`` copies the field each time.
    ``replaced`` is True on the rare finishing event whose text does not extend what was shown
    (text that turned out to belong to a marker); its ``delta`` is then the whole text.
    """

    __slots__ = ()

    @property
    def text(self) -> str:
        return self._built()


class _StreamingLM:
    """Wraps an LM so that its first request streams into ``sink``; everything else is delegated."""

    def __init__(self, lm: LMProtocol, sink: Callable[[StreamDelta], None]) -> None:
        self._lm = lm
        self._sink = sink
        self._streamed = False
        self.model = getattr(lm, "model", "unknown")
        self.model_type = getattr(lm, "model_type", "chat")

    def supports(self, feature: str) -> bool:
        return bool(self._lm.supports(feature))

    def _first(self) -> bool:
        first, self._streamed = not self._streamed, True
        return first

    def _whole(self, completions: list[Completion]) -> list[Completion]:
        if completions:  # an LM that cannot stream: report the answer in one piece
            if completions[0].reasoning:
                self._sink(StreamDelta("reasoning", completions[0].reasoning))
            self._sink(StreamDelta("text", completions[0].text))
        return completions

    def __call__(self, messages: list[Message], **kwargs: object) -> list[Completion]:
        if not self._first():
            return self._lm(messages, **kwargs)
        stream = getattr(self._lm, "stream", None)
        if stream is None:
            return self._whole(self._lm(messages, **kwargs))
        for item in stream(messages, **kwargs):
            if isinstance(item, list):
                return item
            self._sink(item)
        raise RuntimeError(f"{type(self._lm).__name__}.stream ended without the final completions")

    async def acall(self, messages: list[Message], **kwargs: object) -> list[Completion]:
        if not self._first():
            return await self._lm.acall(messages, **kwargs)
        astream = getattr(self._lm, "astream", None)
        if astream is None:
            return self._whole(await self._lm.acall(messages, **kwargs))
        async for item in astream(messages, **kwargs):
            if isinstance(item, list):
                return item
            self._sink(item)
        raise RuntimeError(f"{type(self._lm).__name__}.astream ended without the final completions")


class _Events:
    """Turns LM deltas into field events for one program call."""

    def __init__(self, adapter: Any, signature: Any, native_reasoning: bool, lm: object) -> None:
        self.parser = adapter.stream_parser(signature)
        if getattr(lm, "model_type", "chat") == "text":
            # completion mode: the answer's start is written in the document's cue
            prefix = adapter.answering(lm).answer_prefix(signature, field_views(signature)[1])
            if prefix:
                self.parser.feed(prefix)
        self.native_reasoning = native_reasoning
        self.reasoning: GrowingText | None = None  # native reasoning so far, until the answer starts

    def on_delta(self, delta: Any) -> list[StreamEvent]:
        if getattr(delta, "index", 0) != 0:
            return []
        if delta.kind == "reasoning":
            if not self.native_reasoning:
                return []
            if self.reasoning is None:
                self.reasoning = GrowingText()
            self.reasoning.append(delta.text)
            so_far = TextAt(self.reasoning, self.reasoning.length, "")
            return [StreamEvent("reasoning", so_far, delta=delta.text)]
        if delta.kind != "text":
            return []
        events = [_event(d) for d in self.parser.feed(delta.text)]
        if self.reasoning is not None and self.reasoning.length and events:
            # the answer started: native reasoning is complete
            whole = TextAt(self.reasoning, self.reasoning.length, "")
            events.insert(0, StreamEvent("reasoning", whole, True, delta=""))
            self.reasoning = None
        return events

    def finish(self) -> list[StreamEvent]:
        return [_event(d) for d in self.parser.finish()]


def _event(delta: FieldDelta) -> StreamEvent:
    """The parser's field progress as a program's stream event (the text still unbuilt)."""
    return StreamEvent(delta.field, delta.unbuilt_text(), delta.done, delta.delta, delta.replaced)


class _ModuleCall(Generic[_In, _Out]):
    """The ``module_start`` / ``module_end`` hook events of one streamed program call."""

    def __init__(self, program: Predict[_In, _Out], inputs: Mapping[str, object]) -> None:
        self.program = program
        self.call_id = next(_call_ids)
        emit(
            "module_start",
            callbacks=program.callbacks,
            module=program,
            call_id=self.call_id,
            args=(),
            inputs=inputs,
        )

    def end(self, outputs: _Out | None, error: BaseException | None) -> None:
        program = self.program
        emit(
            "module_end",
            callbacks=program.callbacks,
            module=program,
            call_id=self.call_id,
            outputs=outputs,
            error=error,
        )


async def _scoped(program: Predict[_In, _Out], work: Awaitable[object]) -> object:
    """Await ``work`` with the program's callbacks active (in the task's own context)."""
    with program_callbacks(program.callbacks):
        return await work


class Overrides(NamedTuple):
    """A streamed call's per-call options, as a plain call takes them."""

    lm: LMProtocol | None = None
    adapter: Adapter | None = None
    demos: Sequence[Any] | None = None
    config: Mapping[str, Any] | None = None


def _setup(
    program: Predict[_In, _Out], inputs: Mapping[str, object], over: Overrides
) -> tuple[Adapter, AdapterCall, bool]:
    adapter, call = program._resolve(dict(inputs), over.lm, over.adapter, over.demos, over.config)
    use_native = getattr(program, "_use_native", None)  # ChainOfThought
    return adapter, call, bool(use_native and use_native(call.lm))


def stream_predict(
    program: Predict[_In, _Out], inputs: Mapping[str, object], over: Overrides = Overrides()
) -> Iterator[StreamEvent | _Out]:
    """The generator behind :meth:`Predict.stream` (see the module docstring)."""
    hooks = _ModuleCall(program, inputs)
    try:
        adapter, call, native = _setup(program, inputs, over)
        lm = call.lm
        events = _Events(adapter, call.signature, native, lm)
        pipe: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        streamed = replace(call, lm=_StreamingLM(lm, lambda delta: pipe.put(("delta", delta))))

        def work() -> None:
            try:
                with program_callbacks(program.callbacks):  # in the worker's own context
                    result = adapter.run_call(streamed)
                pipe.put(("done", result))
            except BaseException as exc:
                pipe.put(("error", exc))

        ctx = contextvars.copy_context()
        threading.Thread(target=ctx.run, args=(work,), name="sigform-stream", daemon=True).start()
        while True:
            kind, value = pipe.get()
            if kind == "delta":
                yield from events.on_delta(value)
            elif kind == "error":
                raise value
            else:
                yield from events.finish()
                prediction = program._prediction(value, lm)
                break
    except BaseException as exc:
        hooks.end(None, exc)
        raise
    hooks.end(prediction, None)
    yield prediction


async def astream_predict(
    program: Predict[_In, _Out], inputs: Mapping[str, object], over: Overrides = Overrides()
) -> AsyncIterator[StreamEvent | _Out]:
    """The async generator behind :meth:`Predict.astream` (no threads: one task on this loop)."""
    hooks = _ModuleCall(program, inputs)
    task: asyncio.Task[object] | None = None
    try:
        adapter, call, native = _setup(program, inputs, over)
        lm = call.lm
        events = _Events(adapter, call.signature, native, lm)
        pipe: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
        streamed = replace(call, lm=_StreamingLM(lm, lambda delta: pipe.put_nowait(("delta", delta))))
        work = adapter.arun_call(streamed)
        task = asyncio.ensure_future(_scoped(program, work))
        task.add_done_callback(lambda _: pipe.put_nowait(("done", None)))
        while True:
            kind, value = await pipe.get()
            if kind == "delta":
                for event in events.on_delta(value):
                    yield event
            else:
                result = task.result()  # raises the request's error, if any
                for event in events.finish():
                    yield event
                prediction = program._prediction(result, lm)
                break
    except BaseException as exc:
        if task is not None and not task.done():
            task.cancel()
        hooks.end(None, exc)
        raise
    hooks.end(prediction, None)
    yield prediction
