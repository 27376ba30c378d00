"""Predict.stream / astream: field events as the answer arrives, then the Prediction."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import sigform as sf
from sigform.hooks import Callback, Event
from sigform.lm.interface import Completion
from sigform.predict import ChainOfThought, Predict, Prediction
from sigform.predict.streaming import StreamEvent
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


ANSWER = chat(answer="Rayleigh scattering of sunlight.", confidence="0.8")


def qa(lm: Any) -> Predict:
    return Predict("question -> answer, confidence: float", lm=lm)


def split(items: list[Any]) -> tuple[list[StreamEvent], Prediction]:
    assert isinstance(items[-1], Prediction)
    assert all(isinstance(i, StreamEvent) for i in items[:-1])
    return items[:-1], items[-1]


def test_stream_yields_growing_field_text_then_the_prediction() -> None:
    lm = ScriptedLM([ANSWER])
    lm.stream_chunk_chars = 5
    events, pred = split(list(qa(lm).stream(question="Why is the sky blue?")))
    assert pred.answer == "Rayleigh scattering of sunlight." and pred.confidence == 0.8
    answer_texts = [e.text for e in events if e.field == "answer"]
    assert len(answer_texts) > 2  # it arrived in pieces
    assert all(b.startswith(a) for a, b in itertools.pairwise(answer_texts))  # only grows
    assert answer_texts[-1] == "Rayleigh scattering of sunlight."
    finished = [e.field for e in events if e.done]
    assert finished.index("answer") < finished.index("confidence")
    assert pred._raw == ANSWER


def test_a_stream_ending_without_the_completed_marker_finishes_its_last_field() -> None:
    # the marker is a stop sequence: a provider that honours it never sends it (finish() raised
    # AttributeError: 'tuple' object has no attribute 'startswith', found by mypy)
    lm = ScriptedLM(["[[ ## answer ## ]]\nParis\n\n[[ ## confidence ## ]]\n0.9"])
    lm.stream_chunk_chars = 4
    events, pred = split(list(qa(lm).stream(question="Capital of France?")))
    assert pred.answer == "Paris" and pred.confidence == 0.9
    last = [e for e in events if e.field == "confidence"][-1]
    assert last.done and last.text == "0.9"


def test_astream_matches_stream() -> None:
    lm = ScriptedLM([ANSWER, ANSWER])

    async def collect() -> list[Any]:
        return [item async for item in qa(lm).astream(question="q")]

    async_events, async_pred = split(asyncio.run(collect()))
    sync_events, sync_pred = split(list(qa(lm).stream(question="q")))
    assert async_events == sync_events and async_pred == sync_pred


def test_an_lm_without_stream_reports_the_answer_in_one_piece() -> None:
    class Plain:
        model = "plain"

        def __init__(self) -> None:
            self.inner = ScriptedLM([ANSWER])

        def __call__(self, messages: Any, **kwargs: Any) -> list[Completion]:
            return self.inner(messages, **kwargs)

        async def acall(self, messages: Any, **kwargs: Any) -> list[Completion]:
            return await self.inner.acall(messages, **kwargs)

        def supports(self, feature: str) -> bool:
            return self.inner.supports(feature)

    events, pred = split(list(qa(Plain()).stream(question="q")))
    assert pred.answer.startswith("Rayleigh")
    assert {e.field for e in events} == {"answer", "confidence"}


def test_stream_checks_inputs_first_and_raises_request_errors() -> None:
    lm = ScriptedLM([sf.ProviderError("down")])
    with pytest.raises(sf.InputError):
        list(qa(lm).stream(questoin="q"))
    assert lm.calls == []
    with pytest.raises(sf.ProviderError, match="down"):
        list(qa(lm).stream(question="q"))


def test_stream_reasks_after_a_bad_value_like_a_normal_call() -> None:
    lm = ScriptedLM([chat(answer="a", confidence="very"), chat(answer="a", confidence="0.5")])
    _, pred = split(list(qa(lm).stream(question="q")))
    assert pred.confidence == 0.5 and len(lm.calls) == 2


def test_native_reasoning_streams_as_the_reasoning_field() -> None:
    lm = ScriptedLM(
        [{"text": chat(answer="4"), "reasoning": "two plus two is four"}], features={"reasoning", "stop"}
    )
    lm.stream_chunk_chars = 4
    events, pred = split(list(ChainOfThought("question -> answer: int", lm=lm).stream(question="2+2?")))
    reasoning = [e for e in events if e.field == "reasoning"]
    assert reasoning[-1] == StreamEvent("reasoning", "two plus two is four", True)
    assert len(reasoning) > 2
    assert pred.reasoning == "two plus two is four" and pred.answer == 4


def test_stream_emits_module_hooks_and_carries_settings() -> None:
    seen: list[str] = []

    class Rec(Callback):
        def on_module_start(self, event: Event) -> None:
            seen.append("start")

        def on_module_end(self, event: Event) -> None:
            seen.append("end" if event.error is None else "error")

    with sf.context(lm=ScriptedLM([ANSWER]), callbacks=[Rec()]):
        items = list(qa(None).stream(question="q"))
    assert isinstance(items[-1], Prediction)
    assert seen == ["start", "end"]


def test_each_event_carries_what_its_field_grew_by() -> None:
    # a printer of deltas rebuilds every field exactly, native reasoning included (issue 13
    # follow-up: events carried only a fresh copy of the whole field text, quadratic to stream)
    lm = ScriptedLM(
        [{"text": chat(answer="Rayleigh scattering of sunlight."), "reasoning": "short waves scatter"}],
        features={"reasoning", "stop"},
    )
    lm.stream_chunk_chars = 3
    events, _ = split(list(ChainOfThought("question -> answer", lm=lm).stream(question="Why blue?")))
    printed: dict[str, str] = {}
    for event in events:
        assert not event.replaced
        printed[event.field] = printed.get(event.field, "") + event.delta
        assert printed[event.field] == event.text
    assert printed == {"reasoning": "short waves scatter", "answer": "Rayleigh scattering of sunlight."}
    assert sum(1 for e in events if e.field == "answer" and e.delta) > 3
    assert StreamEvent("answer", "x", True) == StreamEvent("answer", "x", True, delta="")  # not compared


def test_a_finished_text_that_drops_shown_text_says_so() -> None:
    # `**` shown while the answer streamed turns out to open the bold header of the next field
    lm = ScriptedLM(["[[ ## answer ## ]]\nParis **[[ ## confidence ## ]]**\n0.9"])
    lm.stream_chunk_chars = 9  # the third piece ends with `Paris **`
    events, _ = split(list(qa(lm).stream(question="Capital of France?")))
    answer = [e for e in events if e.field == "answer"]
    assert any(e.text.endswith("**") for e in answer[:-1])
    assert answer[-1].done and answer[-1].replaced and answer[-1].delta == answer[-1].text == "Paris"
