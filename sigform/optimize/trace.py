"""Recording which predictors ran, with what inputs and outputs, during one program call.

``with tracing() as calls: program(**inputs)`` fills ``calls`` with ``(predictor, inputs,
prediction)`` for every successful Predict call inside -- nested modules, worker threads that
copied the context, and async calls included. Bootstrapping turns these traces into demos.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sigform.hooks import Callback, ModuleEndEvent, ModuleStartEvent
from sigform.predict.module import program_callbacks

__all__ = ["TraceStep", "tracing"]

TraceStep = tuple[Any, dict[str, Any], Any]


class _Trace:
    """One ``tracing()`` block: finished steps, and the inputs of calls still running."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []
        self.started: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()


_current: ContextVar[_Trace | None] = ContextVar("sigform_trace", default=None)


class _Tracer(Callback):
    def on_module_start(self, event: ModuleStartEvent) -> None:
        trace = _current.get()
        from sigform.predict.predict import Predict

        if trace is not None and isinstance(event.module, Predict):
            fields = event.module.signature.input_fields
            with trace.lock:
                trace.started[event.call_id] = {k: v for k, v in event.inputs.items() if k in fields}

    def on_module_end(self, event: ModuleEndEvent) -> None:
        trace = _current.get()
        if trace is None:
            return
        with trace.lock:
            inputs = trace.started.pop(event.call_id, None)
            if inputs is not None and event.error is None:
                trace.steps.append((event.module, inputs, event.outputs))


_TRACER = _Tracer()


@contextmanager
def tracing() -> Iterator[list[TraceStep]]:
    """Collect the Predict calls made inside the block (see the module docstring)."""
    trace = _Trace()
    token = _current.set(trace)
    try:
        with program_callbacks([_TRACER]):
            yield trace.steps
    finally:
        _current.reset(token)
