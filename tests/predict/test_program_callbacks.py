"""Callbacks given to a program see the LM and adapter events inside it, each once, nested
programs included."""

from __future__ import annotations

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body, stream_chunks

import sigform as sf

_ANSWER = "[[ ## a ## ]]\nParis\n\n[[ ## completed ## ]]"


class _Names(sf.Callback):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_request(self, event: sf.hooks.Event) -> None:
        self.names.append("request")

    def on_response(self, event: sf.hooks.Event) -> None:
        self.names.append("response")

    def on_format(self, event: sf.hooks.Event) -> None:
        self.names.append("format")

    def on_parse(self, event: sf.hooks.Event) -> None:
        self.names.append("parse")

    def on_module_start(self, event: sf.hooks.Event) -> None:
        self.names.append("module_start")

    def on_module_end(self, event: sf.hooks.Event) -> None:
        self.names.append("module_end")


_INSIDE = ["module_start", "format", "request", "response", "parse", "module_end"]


def _answer(body: dict[str, object], headers: dict[str, str]) -> Reply:
    if body.get("stream"):
        return Reply(chunks=stream_chunks(_ANSWER))
    return Reply(body=completion_body([_ANSWER]))


@pytest.fixture
def answering_lm() -> object:
    server = FakeOpenAIServer().start()
    server.reply = _answer
    yield lambda **kw: sf.LM("openai/fake", api_base=server.api_base, fast_path=True, cache=False, **kw)
    server.stop()


@pytest.mark.parametrize("how", ["call", "acall", "stream", "astream"])
def test_program_callbacks_see_the_lm_and_adapter_events_inside_it(answering_lm, how: str) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    rec = _Names()
    lm = answering_lm()
    prog = sf.Predict("q -> a", lm=lm, callbacks=[rec])
    if how == "call":
        assert prog(q="Capital of France?").a == "Paris"
    elif how == "acall":
        assert asyncio.run(prog.acall(q="Capital of France?")).a == "Paris"
    elif how == "stream":
        assert list(prog.stream(q="Capital of France?"))[-1].a == "Paris"
    else:

        async def consume() -> list[object]:
            return [e async for e in prog.astream(q="Capital of France?")]

        assert asyncio.run(consume())[-1].a == "Paris"
    assert rec.names == _INSIDE
    # the scope ends with the program: a direct LM call afterwards is not the program's
    lm([{"role": "user", "content": "hi"}])
    assert rec.names == _INSIDE


def test_a_program_callback_also_registered_elsewhere_sees_each_event_once(answering_lm) -> None:  # type: ignore[no-untyped-def]
    rec = _Names()
    prog = sf.Predict("q -> a", lm=answering_lm(callbacks=[rec]), callbacks=[rec])
    with sf.context(callbacks=[rec]):
        prog(q="Capital of France?")
    assert rec.names == _INSIDE
    sf.hooks.register(rec)
    try:
        rec.names.clear()
        prog(q="Capital of France?")
    finally:
        sf.hooks.unregister(rec)
    assert rec.names == _INSIDE


def test_an_outer_programs_callbacks_see_the_inner_programs_lm_calls(answering_lm) -> None:  # type: ignore[no-untyped-def]
    outer_rec, inner_rec = _Names(), _Names()
    inner = sf.Predict("q -> a", lm=answering_lm(), callbacks=[inner_rec])

    class Outer(sf.Module):
        def forward(self, q: str) -> object:
            return inner(q=q)

    outer = Outer()
    outer.callbacks = [outer_rec]
    outer(q="Capital of France?")
    assert outer_rec.names == ["module_start", *_INSIDE, "module_end"]
    assert inner_rec.names == _INSIDE
