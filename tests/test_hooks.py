"""Lifecycle callbacks: registration scopes, veto, headers, events, and a tracing example."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform import hooks
from sigform.hook_events import make_event
from sigform.lm import LM

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


@pytest.fixture(autouse=True)
def _clean_registry() -> Any:
    before = hooks.registered()
    yield
    for cb in hooks.registered():
        if cb not in before:
            hooks.unregister(cb)


class Recorder(hooks.Callback):
    def __init__(self) -> None:
        self.events: list[hooks.Event] = []

    def on_request(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_response(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_error(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_format(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_parse(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_tool(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_module_start(self, event: hooks.Event) -> None:
        self.events.append(event)

    def on_module_end(self, event: hooks.Event) -> None:
        self.events.append(event)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.events]


def lm_for(server: FakeOpenAIServer, **kw: Any) -> LM:
    return LM("openai/fake", api_base=server.api_base, api_key="sk-k", **kw)


def test_emit_without_callbacks_is_a_no_op() -> None:
    assert hooks.active_callbacks() == []
    assert hooks.emit("format", messages=[]) is None


def test_every_scope_sees_events(lm_server: FakeOpenAIServer) -> None:
    global_cb, scoped_cb, lm_cb = Recorder(), Recorder(), Recorder()
    assert hooks.register(global_cb) is global_cb
    lm = lm_for(lm_server, callbacks=[lm_cb])
    with sf.context(callbacks=[scoped_cb]):
        lm(MSG)
    lm(MSG)  # outside the context: scoped callback no longer sees it
    assert global_cb.names == ["request", "response", "request", "response"]
    assert lm_cb.names == ["request", "response", "request", "response"]
    assert scoped_cb.names == ["request", "response"]
    hooks.unregister(global_cb)
    lm(MSG)
    assert len(global_cb.events) == 4


def test_response_event_payload(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    rec = Recorder()
    lm = lm_for(lm_server, callbacks=[rec], fast_path=fast_path)
    lm(MSG, temperature=0.1)
    lm(MSG, temperature=0.1)
    request, response, _, hit = rec.events
    assert request.model == "openai/fake" and request.messages == MSG
    assert request.params == {"temperature": 0.1}
    assert response.completions[0].text == "echo: hi"
    assert response.usage.prompt_tokens == 11 and response.cache_hit is False and response.latency > 0
    assert hit.cache_hit is True and hit.completions[0].usage.cache_hit


def test_veto_stops_the_call_before_the_network(lm_server: FakeOpenAIServer) -> None:
    class Budget(hooks.Callback):
        def on_request(self, event: hooks.Event) -> None:
            if "forbidden" in str(event.messages):
                event.veto("over budget")

    lm = lm_for(lm_server, callbacks=[Budget()])
    with pytest.raises(hooks.RequestVetoed, match="over budget") as info:
        lm([{"role": "user", "content": "forbidden"}])
    assert info.value.callback == "Budget" and isinstance(info.value, sf.SigformError)
    assert lm_server.requests == []
    assert lm(MSG)[0].text == "echo: hi"
    with pytest.raises(hooks.RequestVetoed):
        asyncio.run(lm.acall([{"role": "user", "content": "forbidden"}]))
    with pytest.raises(hooks.RequestVetoed):
        list(lm.stream([{"role": "user", "content": "forbidden"}]))
    assert len(lm_server.requests) == 1


def test_request_hook_adds_headers(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    class Tracing(hooks.Callback):
        def on_request(self, event: hooks.Event) -> None:
            event.headers["traceparent"] = "00-abc-def-01"

    lm_for(lm_server, callbacks=[Tracing()], fast_path=fast_path, cache=False)(MSG)
    assert lm_server.headers[-1]["traceparent"] == "00-abc-def-01"


def test_error_event_and_broken_callbacks(lm_server: FakeOpenAIServer,
                                          caplog: pytest.LogCaptureFixture) -> None:
    class Broken(hooks.Callback):
        def on_response(self, event: hooks.Event) -> None:
            raise RuntimeError("logger bug")

    rec = Recorder()
    lm = lm_for(lm_server, callbacks=[Broken(), rec], num_retries=0)
    assert lm(MSG)[0].text == "echo: hi"  # the broken callback does not break the call
    assert "logger bug" in caplog.text or "Broken.on_response raised" in caplog.text
    assert rec.names == ["request", "response"]  # later callbacks still run
    lm_server.queue.append(lm_server.error(400, "bad"))
    with pytest.raises(sf.BadRequestError):
        lm(MSG, cache=False)
    assert rec.names[-2:] == ["request", "error"]
    assert isinstance(rec.events[-1].error, sf.BadRequestError)


def test_only_request_events_can_be_vetoed() -> None:
    event = make_event("response", {})
    with pytest.raises(sf.SigformError):
        event.veto("no")
    with pytest.raises(AttributeError, match="no field"):
        _ = event.missing


def test_unknown_event_name_is_an_error() -> None:
    hooks.register(Recorder())
    with pytest.raises(ValueError, match="unknown event"):
        hooks.emit("requestt")


def test_events_are_typed_dataclasses_with_the_old_dict_access() -> None:
    """Each event has its own class and fields; ``payload`` and ``get`` still read them as a dict."""
    event = make_event("parse", {"adapter": "ChatAdapter", "completion": "x", "values": {"a": 1}})
    assert isinstance(event, hooks.ParseEvent) and dataclasses.is_dataclass(event)
    assert event.values == {"a": 1} and event.error is None and event.signature is None
    assert event.payload == {
        "adapter": "ChatAdapter",
        "signature": None,
        "completion": "x",
        "values": {"a": 1},
        "error": None,
    }
    assert event.get("values") == {"a": 1} and event.get("nope", 3) == 3
    with pytest.raises(TypeError, match="no field"):
        make_event("parse", {"valeus": {}})


def test_program_events_reach_callbacks() -> None:
    rec = Recorder()
    with sf.context(callbacks=[rec]):
        hooks.emit("module_start", module="qa", inputs={"q": 1})
        hooks.emit("format", adapter="ChatAdapter", messages=[])
        hooks.emit("parse", adapter="ChatAdapter", values={"a": 1})
        hooks.emit("tool", tool="search", arguments={})
        hooks.emit("module_end", module="qa", outputs={"a": 1})
    assert rec.names == ["module_start", "format", "parse", "tool", "module_end"]
    assert rec.events[2].values == {"a": 1} and rec.events[0].get("missing", 5) == 5


def test_register_rejects_non_callbacks() -> None:
    with pytest.raises(TypeError, match="Callback"):
        hooks.register(print)  # type: ignore[arg-type]


# -- an OpenTelemetry-style span recorder built only on the hooks -------------------------------


@dataclass
class Span:
    name: str
    span_id: int
    parent_id: int | None
    start: float
    end: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    status: str = "unset"


class SpanRecorder(hooks.Callback):
    """Turns module and LM events into nested spans, as an OTel exporter would."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._stack: list[Span] = []
        self._ids = itertools.count(1)

    def _open(self, name: str, **attrs: Any) -> Span:
        parent = self._stack[-1].span_id if self._stack else None
        span = Span(name, next(self._ids), parent, time.perf_counter(), attributes=dict(attrs))
        self._stack.append(span)
        self.spans.append(span)
        return span

    def _close(self, status: str, **attrs: Any) -> None:
        span = self._stack.pop()
        span.end = time.perf_counter()
        span.status = status
        span.attributes.update(attrs)

    def on_module_start(self, event: hooks.Event) -> None:
        self._open(f"module {event.module}")

    def on_module_end(self, event: hooks.Event) -> None:
        self._close("error" if event.get("error") else "ok")

    def on_request(self, event: hooks.Event) -> None:
        span = self._open("chat " + event.model, **{"gen_ai.request.model": event.model,
                                                    "gen_ai.system": event.provider})
        event.headers["traceparent"] = f"00-{span.span_id:032x}-{span.span_id:016x}-01"

    def on_response(self, event: hooks.Event) -> None:
        self._close("ok", **{"gen_ai.usage.input_tokens": event.usage.prompt_tokens,
                             "gen_ai.usage.output_tokens": event.usage.completion_tokens,
                             "sigform.cache_hit": event.cache_hit})

    def on_error(self, event: hooks.Event) -> None:
        self._close("error", **{"error.type": type(event.error).__name__})


def test_span_recorder(lm_server: FakeOpenAIServer) -> None:
    tracer = SpanRecorder()
    lm = lm_for(lm_server, num_retries=0)
    with sf.context(callbacks=[tracer]):
        hooks.emit("module_start", module="qa")
        lm(MSG)
        lm_server.queue.append(lm_server.error(400, "bad"))
        with pytest.raises(sf.BadRequestError):
            lm(MSG, temperature=0.5)
        hooks.emit("module_end", module="qa")
    root, ok_span, err_span = tracer.spans
    assert root.name == "module qa" and root.parent_id is None and root.status == "ok"
    assert ok_span.parent_id == root.span_id and err_span.parent_id == root.span_id
    assert ok_span.attributes["gen_ai.usage.input_tokens"] == 11
    assert ok_span.attributes["gen_ai.system"] == "openai"
    assert err_span.status == "error" and err_span.attributes["error.type"] == "BadRequestError"
    assert all(s.end is not None and s.end >= s.start for s in tracer.spans)
    assert lm_server.headers[0]["traceparent"] == f"00-{ok_span.span_id:032x}-{ok_span.span_id:016x}-01"
