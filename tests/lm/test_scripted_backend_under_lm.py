"""A scripted backend runs *under* the real ``sigform.LM`` (issue 16 item 2): the route's backend
is a :class:`~sigform.lm.backend.Backend`, and ``LM(model, backend=ScriptedBackend(...))`` exercises
the LM's own cache, hooks, history, usage, retries, ``n`` and streaming, and the pruning and
adapters above it -- with no server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.conversation import Layout, Pruning, send, tool_units
from sigform.hooks import Callback, Event
from sigform.lm import LM, Usage
from sigform.lm.backend import Backend
from sigform.lm.streaming import StreamDelta
from sigform.testing import ScriptedBackend

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path) -> Any:
    with sf.context(cache_dir=str(tmp_path / "cache")):
        yield


def _lm(backend: ScriptedBackend, **options: Any) -> LM:
    return LM("openai/gpt-4o-mini", backend=backend, retry_delay=0, **options)


def test_the_scripted_backend_is_a_backend_and_the_route_uses_it() -> None:
    backend = ScriptedBackend(["ok"])
    lm = _lm(backend)
    assert isinstance(backend, Backend)
    assert lm.prepare(MSG).route.backend is backend
    assert lm(MSG)[0].text == "ok"
    assert lm.history[-1].backend == "scripted"


def test_the_response_cache_answers_the_second_identical_call() -> None:
    backend = ScriptedBackend(["first", "second"])
    lm = _lm(backend)
    assert lm(MSG)[0].text == "first"
    again = lm(MSG)[0]
    assert again.text == "first" and again.usage.cache_hit
    assert len(backend.requests) == 1 and lm.stats == {"calls": 2, "cache_hits": 1, "errors": 0}
    assert lm(MSG, cache=False)[0].text == "second"


def test_request_defaults_and_hook_headers_reach_the_backend() -> None:
    class Trace(Callback):
        def on_request(self, event: Event) -> None:
            event.headers["x-trace"] = "t1"

    backend = ScriptedBackend(["ok"])
    lm = _lm(backend, temperature=0.2, callbacks=[Trace()], headers={"x-team": "qa"})
    lm(MSG, max_tokens=5)
    sent = backend.requests[-1]
    assert sent.params == {"temperature": 0.2, "max_tokens": 5}
    assert sent.headers == {"x-team": "qa", "x-trace": "t1"}


def test_retryable_failures_are_retried_by_the_lm_and_recorded_once() -> None:
    usage = Usage(prompt_tokens=7, completion_tokens=2)
    backend = ScriptedBackend([sf.RateLimitError("slow down"), sf.ProviderError("503"), "ok"], usage=usage)
    lm = _lm(backend)
    assert lm(MSG)[0].text == "ok"
    assert len(backend.requests) == 3
    assert len(lm.history) == 1 and lm.history[-1].error is None
    assert lm.usage.prompt_tokens == 7


def test_a_final_failure_is_recorded_with_the_error_hook() -> None:
    errors: list[BaseException] = []

    class Seen(Callback):
        def on_error(self, event: Event) -> None:
            errors.append(event.error)

    backend = ScriptedBackend([sf.AuthenticationError("bad key")])
    lm = _lm(backend, callbacks=[Seen()])
    with pytest.raises(sf.AuthenticationError):
        lm(MSG)
    assert len(backend.requests) == 1  # not retried
    assert lm.stats["errors"] == 1 and "bad key" in (lm.history[-1].error or "")
    assert [type(e) for e in errors] == [sf.AuthenticationError]


def test_n_candidates_come_from_one_request() -> None:
    backend = ScriptedBackend(["a", "b", "c"])
    lm = _lm(backend)
    assert [c.text for c in lm(MSG, n=3)] == ["a", "b", "c"]
    assert len(backend.requests) == 1 and backend.requests[0].params["n"] == 3


def test_a_stream_is_retried_before_its_first_piece_and_cached_whole() -> None:
    backend = ScriptedBackend([sf.ProviderError("503"), "hello world"], chunk_size=3)
    lm = _lm(backend)
    out = list(lm.stream(MSG))
    pieces = [d.text for d in out if isinstance(d, StreamDelta)]
    assert pieces == ["hel", "lo ", "wor", "ld"]
    assert out[-1][0].text == "hello world"  # type: ignore[index]
    replay = list(lm.stream(MSG))  # a cache hit is replayed
    assert replay[-1][0].usage.cache_hit and len(backend.requests) == 2  # type: ignore[index]


def test_async_calls_and_streams_go_through_the_same_lifecycle() -> None:
    backend = ScriptedBackend([sf.ProviderError("503"), "one", "two"])
    lm = _lm(backend, cache=False)

    async def run() -> tuple[str, str]:
        first = (await lm.acall(MSG))[0].text
        last: Any = None
        async for item in lm.astream(MSG):
            last = item
        return first, last[0].text

    assert asyncio.run(run()) == ("one", "two")
    assert len(backend.requests) == 3 and len(lm.history) == 2


def test_pruning_above_the_lm_shortens_what_the_backend_receives() -> None:
    messages = [{"role": "system", "content": "be brief"}]
    for i in range(4):
        messages += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    messages.append({"role": "user", "content": "now?"})
    layout = Layout(1, tool_units(messages, 1, len(messages) - 1))
    backend = ScriptedBackend(["ok"])
    lm = _lm(backend, prune=Pruning(keep_last=2))
    send(lm, messages, {}, layout=layout)
    sent = [m["content"] for m in backend.requests[-1].messages]
    assert sent[0] == "be brief" and sent[-3:] == ["q3", "a3", "now?"] and "q0" not in sent
    assert lm.history[-1].prune_report is not None and lm.history[-1].prune_report.dropped_units == 6


def test_a_context_window_error_prunes_further_and_retries_once() -> None:
    messages = [{"role": "system", "content": "s"}]
    for i in range(4):
        messages += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    messages.append({"role": "user", "content": "now?"})
    layout = Layout(1, tool_units(messages, 1, len(messages) - 1))
    backend = ScriptedBackend([sf.ContextWindowError("too long"), "ok"])
    lm = _lm(backend)
    assert send(lm, messages, {}, layout=layout)[0].text == "ok"
    assert len(backend.requests[1].messages) < len(backend.requests[0].messages)


def test_a_program_runs_over_the_scripted_backend() -> None:
    backend = ScriptedBackend(['{"answer": "Paris"}'])
    lm = _lm(backend)
    with sf.context(lm=lm, adapter=sf.JSONAdapter()):
        assert sf.Predict("question -> answer")(question="Capital of France?").answer == "Paris"
    assert "Capital of France?" in str(backend.requests[-1].messages)


class _BreaksMidStream:
    """A backend whose streams send one piece and then lose the connection."""

    name = "breaks"

    def __init__(self) -> None:
        self.opened = 0

    def complete(self, req: Any) -> Any:
        raise AssertionError("not used")

    async def acomplete(self, req: Any) -> Any:
        raise AssertionError("not used")

    def stream(self, req: Any) -> Any:
        self.opened += 1
        yield {"choices": [{"index": 0, "delta": {"content": "par"}, "finish_reason": None}]}
        raise sf.ProviderError("connection lost")

    async def astream(self, req: Any) -> Any:
        for chunk in self.stream(req):
            yield chunk


def test_a_stream_that_fails_after_a_piece_is_not_retried_and_is_recorded() -> None:
    backend = _BreaksMidStream()
    lm = LM("openai/gpt-4o-mini", backend=backend, retry_delay=0)
    seen: list[Any] = []
    with pytest.raises(sf.ProviderError, match="connection lost"):
        for item in lm.stream(MSG):
            seen.append(item)
    assert [d.text for d in seen] == ["par"] and backend.opened == 1
    assert lm.stats["errors"] == 1 and "connection lost" in (lm.history[-1].error or "")

    async def run() -> None:
        async for _ in lm.astream(MSG, cache=False):
            pass

    with pytest.raises(sf.ProviderError, match="connection lost"):
        asyncio.run(run())
    assert backend.opened == 2


def test_a_stream_left_early_records_nothing_and_sends_once() -> None:
    backend = ScriptedBackend(["a long answer"], chunk_size=2)
    lm = _lm(backend)
    stream = lm.stream(MSG)
    assert next(stream).text == "a "  # type: ignore[union-attr]
    stream.close()
    assert len(backend.requests) == 1 and len(lm.history) == 0
