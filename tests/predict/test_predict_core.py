"""Predict: calling, typed outputs, input checks, resolution order, demos, n > 1, async."""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Optional

import pytest

import sigform as sf
from sigform.errors import InputError, ParseError, SignatureError
from sigform.lm.interface import Completion, Usage
from sigform.predict import Example, Predict, Prediction
from sigform.predict import predict as predict_mod
from sigform.settings import _global
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    """A completion in ChatAdapter's format."""
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


class QA(sf.Signature):
    """Answer briefly."""

    question: str = sf.InputField()
    answer: str = sf.OutputField()
    confidence: float = sf.OutputField()


@pytest.fixture
def clean_settings():
    saved = dict(_global)
    yield
    _global.clear()
    _global.update(saved)


def test_call_returns_typed_prediction_with_metadata() -> None:
    lm = ScriptedLM([{"text": chat(answer="Paris", confidence="0.9"), "usage": {"prompt_tokens": 7}}])
    qa = Predict(QA, lm=lm, adapter=sf.ChatAdapter())
    pred = qa(question="Capital of France?")
    assert isinstance(pred, Prediction)
    assert pred.answer == "Paris" and pred["confidence"] == 0.9
    assert isinstance(pred.confidence, float)
    assert pred._raw.startswith("[[ ## answer ## ]]")
    assert pred._usage.prompt_tokens == 7
    assert pred._meta.adapter == "ChatAdapter"
    assert pred._meta.attempts == 1 and pred._meta.model == "scripted"
    assert "Capital of France?" in lm.last_messages[-1]["content"]
    assert pred._meta.messages and pred._meta.messages[-1]["role"] == "user"


@pytest.mark.parametrize(
    "signature",
    [
        "question -> answer, confidence: float",
        {"question": sf.InputField(), "answer": sf.OutputField(), "confidence": (float, sf.OutputField())},
        QA,
    ],
)
def test_signature_forms(signature: object) -> None:
    lm = ScriptedLM([chat(answer="x", confidence="1")])
    pred = Predict(signature, lm=lm)(question="q")
    assert pred.to_dict() == {"answer": "x", "confidence": 1.0}


def test_bad_signature_is_a_clear_error() -> None:
    with pytest.raises(SignatureError, match="Signature class, a string"):
        Predict(42)
    with pytest.raises(SignatureError, match="reserved"):
        Predict("config -> answer")  # per-call keyword names cannot be input fields


def test_positional_arguments_are_refused() -> None:
    lm = ScriptedLM([])
    with pytest.raises(InputError, match=r"keyword arguments \(question=...\)"):
        Predict(QA, lm=lm)("Capital?")
    assert lm.calls == []


def test_missing_input_names_the_field_before_any_lm_call() -> None:
    lm = ScriptedLM([])
    with pytest.raises(InputError, match="missing input `question`"):
        Predict(QA, lm=lm)()
    assert lm.calls == []


def test_unknown_input_is_an_error_with_a_suggestion() -> None:
    lm = ScriptedLM([])
    with pytest.raises(InputError, match=r"unknown input `questoin` \(did you mean `question`\?\)"):
        Predict(QA, lm=lm)(questoin="x")
    assert lm.calls == []


def test_unknown_input_setting_warn_and_ignore() -> None:
    lm = ScriptedLM([chat(answer="a", confidence="1")] * 2)
    qa = Predict(QA, lm=lm)
    with sf.context(unknown_inputs="warn"), pytest.warns(UserWarning, match="unknown input `extra`"):
        assert qa(question="q", extra=1).answer == "a"
    assert "extra" not in lm.last_messages[-1]["content"]
    with sf.context(unknown_inputs="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert qa(question="q", extra=1).answer == "a"


def test_invalid_value_names_field_type_and_value() -> None:
    lm = ScriptedLM([])
    prog = Predict("count: int, text -> summary", lm=lm)
    with pytest.raises(InputError) as info:
        prog(count="five", text="t")
    message = str(info.value)
    assert "`count`" in message and "int" in message and "'five'" in message
    with pytest.raises(InputError, match="input `text` expects str, got list"):
        prog(count=1, text=["a", "b"])
    assert lm.calls == []


def test_lax_validation_converts_unambiguous_values() -> None:
    lm = ScriptedLM([chat(summary="ok")] * 2)
    prog = Predict("count: int, text, tags: list[str] -> summary", lm=lm)
    prog(count="5", text=12, tags=("a", "b"))  # "5" -> 5, 12 -> "12", tuple -> list
    user = lm.last_messages[-1]["content"]
    assert "5" in user and "12" in user
    with pytest.raises(InputError, match="`tags`"):
        prog(count=1, text="t", tags="not a list")


def test_constraints_on_inputs_are_enforced() -> None:
    class Sig(sf.Signature):
        n: int = sf.InputField(ge=0)
        out: str = sf.OutputField()

    with pytest.raises(InputError, match=r"`n`.*greater than or equal to 0"):
        Predict(Sig, lm=ScriptedLM([]))(n=-1)


def test_optional_input_may_be_omitted() -> None:
    class Sig(sf.Signature):
        question: str = sf.InputField()
        hint: Optional[str] = sf.InputField()
        answer: str = sf.OutputField()

    lm = ScriptedLM([chat(answer="a")])
    assert Predict(Sig, lm=lm)(question="q").answer == "a"


def test_lm_resolution_order(clean_settings: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def scripted(name: str) -> ScriptedLM:
        return ScriptedLM(lambda m, k: chat(answer=name, confidence="1"), model=name)

    default, configured, scoped, program_lm, call_lm = map(
        scripted, ["default", "configured", "scoped", "program", "call"]
    )
    monkeypatch.setattr(predict_mod, "_default_lm", default)
    bare = Predict(QA)
    assert bare(question="q").answer == "default"
    sf.configure(lm=configured)
    assert bare(question="q").answer == "configured"
    with sf.context(lm=scoped):
        assert bare(question="q").answer == "scoped"
        owned = Predict(QA, lm=program_lm)
        assert owned(question="q").answer == "program"
        assert owned(question="q", lm=call_lm).answer == "call"


def test_adapter_resolution_order(clean_settings: None) -> None:
    from sigform.adapters import ChatAdapter, JSONAdapter

    lm = ScriptedLM(
        lambda messages, kwargs: (
            chat(answer="c", confidence="1")
            if "[[ ##" in messages[0]["content"]
            else '{"answer": "j", "confidence": 1}'
        )
    )
    qa = Predict(QA, lm=lm)
    assert qa(question="q")._meta.adapter == "JSONAdapter"  # the default, for an LM with JSON mode
    sf.configure(adapter=ChatAdapter())
    assert qa(question="q")._meta.adapter == "ChatAdapter"
    with sf.context(adapter=JSONAdapter()):
        assert qa(question="q")._meta.adapter == "JSONAdapter"
        assert Predict(QA, lm=lm, adapter=ChatAdapter())(question="q").answer == "c"
        assert qa(question="q", adapter=ChatAdapter()).answer == "c"


def test_lm_kwargs_merge_program_then_call_config() -> None:
    lm = ScriptedLM([chat(answer="a", confidence="1")] * 2)
    qa = Predict(QA, lm=lm, temperature=0.1, max_tokens=50)
    qa(question="q")
    assert lm.last_kwargs["temperature"] == 0.1 and lm.last_kwargs["max_tokens"] == 50
    qa(question="q", config={"temperature": 0.7})
    assert lm.last_kwargs["temperature"] == 0.7 and lm.last_kwargs["max_tokens"] == 50
    assert qa.config == {"temperature": 0.1, "max_tokens": 50}  # the call did not change the program


def test_demos_program_and_per_call() -> None:
    lm = ScriptedLM([chat(answer="a", confidence="1")] * 2)
    demo = Example(question="2+2?", answer="4", confidence=1.0)
    qa = Predict(QA, lm=lm, demos=[demo])
    qa(question="q")
    sent = "\n".join(str(m["content"]) for m in lm.last_messages)
    assert "2+2?" in sent
    qa(question="q", demos=[{"question": "Sky colour?", "answer": "blue", "confidence": 0.8}])
    sent = "\n".join(str(m["content"]) for m in lm.last_messages)
    assert "Sky colour?" in sent and "2+2?" not in sent
    assert qa.demos == [demo]


def test_n_candidates_become_completions() -> None:
    lm = ScriptedLM([chat(answer=a, confidence="0.5") for a in ["x", "y", "z"]])
    pred = Predict(QA, lm=lm, n=3)(question="q")
    assert pred.answer == "x"
    assert pred.completions.answer == ["x", "y", "z"]
    assert [c._raw for c in pred.completions] == [chat(answer=a, confidence="0.5") for a in "xyz"]


def test_parse_failure_raises_parse_error_with_raw_text() -> None:
    lm = ScriptedLM(["I don't know."] * 4)
    with pytest.raises(ParseError) as info:
        Predict(QA, lm=lm)(question="q")
    assert info.value.raw == "I don't know."


def test_completion_usage_and_model_reported() -> None:
    completion = Completion(
        text=chat(answer="a", confidence="1"), usage=Usage(prompt_tokens=3, completion_tokens=2), model="m-1"
    )
    pred = Predict(QA, lm=ScriptedLM([completion]))(question="q")
    assert pred._usage.total_tokens == 5
    assert pred._meta.model == "m-1"
    assert pred._meta.completion is completion


def test_acall_uses_the_async_adapter_path_without_threads() -> None:
    seen: list[threading.Thread] = []

    async def answer(messages: object, kwargs: object) -> str:
        seen.append(threading.current_thread())
        return chat(answer="async", confidence="1")

    qa = Predict(QA, lm=ScriptedLM(answer))
    pred = asyncio.run(qa.acall(question="q"))
    assert pred.answer == "async"
    assert seen == [threading.main_thread()]


def test_async_input_errors_are_raised_too() -> None:
    with pytest.raises(InputError, match="missing input"):
        asyncio.run(Predict(QA, lm=ScriptedLM([])).acall())


def test_signature_can_be_replaced_and_inputs_follow() -> None:
    lm = ScriptedLM([chat(summary="s")])
    prog = Predict(QA, lm=lm)
    prog.signature = "text -> summary"
    assert prog(text="t").summary == "s"
    with pytest.raises(InputError, match="unknown input `question`"):
        prog(question="q")


def test_repr() -> None:
    qa = Predict(QA, lm=ScriptedLM([], model="mini"), demos=[{"question": "a", "answer": "b"}], temperature=0)
    assert repr(qa) == "Predict('question -> answer, confidence: float', demos=1, lm='mini', temperature=0)"
