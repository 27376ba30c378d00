"""Module: forward/aforward, named_predictors, deep copy, reset, hooks around every call."""

from __future__ import annotations

import asyncio
import threading

import pytest

import sigform as sf
from sigform.hooks import Callback, Event
from sigform.predict import ChainOfThought, Module, Predict
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


class TwoStep(Module):
    def __init__(self) -> None:
        self.draft = Predict("question -> draft")
        self.polish = Predict("draft -> answer")

    def forward(self, question: str) -> sf.Prediction:
        draft = self.draft(question=question).draft
        return self.polish(draft=draft)


class Nested(Module):
    def __init__(self) -> None:
        self.inner = TwoStep()
        self.steps = [Predict("a -> b"), ChainOfThought("b -> c")]
        self.by_name = {"x": Predict("c -> d")}
        self.alias = self.inner.draft  # the same predictor twice is listed once


def scripted_two_step() -> ScriptedLM:
    return ScriptedLM.by_input({"Question": chat(draft="rough"), "rough": chat(answer="final")})


def test_forward_runs_sub_programs() -> None:
    lm = scripted_two_step()
    with sf.context(lm=lm):
        pred = TwoStep()(question="Question?")
    assert pred.answer == "final"
    assert len(lm.calls) == 2


def test_named_predictors_walks_attributes_lists_and_dicts() -> None:
    names = [name for name, _ in Nested().named_predictors()]
    assert names == ["inner.draft", "inner.polish", "steps[0]", "steps[1]", "by_name['x']"]
    solo = Predict("a -> b")
    assert solo.named_predictors() == [("self", solo)]
    assert len(Nested().predictors()) == 5


def test_forward_is_required() -> None:
    class Empty(Module):
        pass

    with pytest.raises(NotImplementedError, match="Empty must define forward"):
        Empty()()


def test_deepcopy_copies_state_but_shares_lms_and_adapters() -> None:
    from sigform.adapters import ChatAdapter

    lm = ScriptedLM([])
    adapter = ChatAdapter()
    prog = TwoStep()
    prog.draft.lm = lm
    prog.draft.adapter = adapter
    prog.draft.demos = [sf.Example(question="q", draft="d")]
    copy = prog.deepcopy()
    assert copy is not prog and copy.draft is not prog.draft
    assert copy.draft.lm is lm and copy.draft.adapter is adapter
    assert copy.draft.signature == prog.draft.signature
    copy.draft.demos.append(sf.Example(question="q2", draft="d2"))
    copy.draft.demos[0].question = "changed"
    assert len(prog.draft.demos) == 1 and prog.draft.demos[0].question == "q"


def test_deepcopy_is_callable_and_independent() -> None:
    lm = scripted_two_step()
    prog = TwoStep()
    clone = prog.deepcopy()
    with sf.context(lm=lm):
        assert clone(question="Question?").answer == "final"


def test_reset_clears_demos_and_reset_copy_leaves_original() -> None:
    prog = TwoStep()
    for p in prog.predictors():  # each predictor's own fields: a demo's unknown key is an error
        p.demos = [{name: "x" for name in p.signature.fields}]
    fresh = prog.reset_copy()
    assert all(p.demos == [] for p in fresh.predictors())
    assert all(len(p.demos) == 1 for p in prog.predictors())
    prog.reset()
    assert all(p.demos == [] for p in prog.predictors())


def test_set_lm_sets_every_predictor() -> None:
    lm = ScriptedLM([])
    prog = Nested()
    prog.set_lm(lm)
    assert all(p.lm is lm for p in prog.predictors())


class Recorder(Callback):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    def on_module_start(self, event: Event) -> None:
        self.events.append(("start", type(event.module).__name__, event.call_id))

    def on_module_end(self, event: Event) -> None:
        self.events.append(("end", type(event.module).__name__, event.error))


def test_hooks_wrap_every_module_call() -> None:
    rec = Recorder()
    with sf.context(lm=scripted_two_step(), callbacks=[rec]):
        TwoStep()(question="Question?")
    kinds = [(kind, name) for kind, name, _ in rec.events]
    assert kinds == [
        ("start", "TwoStep"),
        ("start", "Predict"),
        ("end", "Predict"),
        ("start", "Predict"),
        ("end", "Predict"),
        ("end", "TwoStep"),
    ]
    assert all(err is None for kind, _, err in rec.events if kind == "end")


def test_hooks_report_errors_and_per_program_callbacks() -> None:
    rec = Recorder()
    prog = Predict("a -> b", lm=ScriptedLM([]), callbacks=[rec])
    with pytest.raises(sf.InputError):
        prog()
    assert rec.events[0][:2] == ("start", "Predict")
    assert rec.events[1][0] == "end" and isinstance(rec.events[1][2], sf.InputError)


def test_acall_runs_forward_in_a_thread_when_no_aforward() -> None:
    threads: list[threading.Thread] = []

    class Sync(Module):
        def forward(self, x: int) -> int:
            threads.append(threading.current_thread())
            return x * 2

    assert asyncio.run(Sync().acall(x=21)) == 42
    assert threads and threads[0] is not threading.main_thread()


def test_acall_prefers_aforward_and_sees_settings() -> None:
    class Native(Module):
        def forward(self, question: str) -> object:
            raise AssertionError("forward must not run when aforward exists")

        async def aforward(self, question: str) -> object:
            return await self.step.acall(question=question)

        def __init__(self) -> None:
            self.step = Predict("question -> answer")

    lm = ScriptedLM([chat(answer="yes")])

    async def main() -> object:
        with sf.context(lm=lm):
            return await Native().acall(question="q")

    assert asyncio.run(main()).answer == "yes"


def test_settings_reach_forward_run_in_a_thread() -> None:
    lm = scripted_two_step()

    async def main() -> object:
        with sf.context(lm=lm):
            return await TwoStep().acall(question="Question?")

    assert asyncio.run(main()).answer == "final"


def test_module_repr_lists_predictors() -> None:
    text = repr(TwoStep())
    assert text.startswith("TwoStep(") and "draft: Predict('question -> draft')" in text


def test_track_usage_sums_every_request_inside_a_module() -> None:
    from sigform.predict import track_usage

    lm = ScriptedLM.by_input(
        {
            "Question": {"text": chat(draft="rough"), "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
            "rough": {"text": chat(answer="final"), "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
        }
    )
    with sf.context(lm=lm), track_usage() as outer:
        with track_usage() as inner:
            TwoStep()(question="Question?")
        TwoStep()(question="Question?")
    assert inner.requests == 2 and inner.usage.total_tokens == 35
    assert outer.requests == 4 and outer.usage.prompt_tokens == 60
