"""ChainOfThought: a reasoning output first; native reasoning from the provider when available."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.predict import ChainOfThought
from sigform.testing import ScriptedLM
from sigform.types import Reasoning


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def all_text(lm: ScriptedLM) -> str:
    return "\n".join(str(m["content"]) for m in lm.last_messages)


def test_signature_gains_reasoning_first_and_regenerated_instructions() -> None:
    cot = ChainOfThought("question -> answer: int")
    assert list(cot.signature.output_fields) == ["reasoning", "answer"]
    assert cot.signature.output_fields["reasoning"].annotation is Reasoning
    assert "`reasoning`" in cot.signature.instructions  # default instructions regenerated
    explicit = ChainOfThought(sf.make_signature("question -> answer", "Be terse."))
    assert explicit.signature.instructions == "Be terse."


def test_text_reasoning_when_the_model_has_no_native_reasoning() -> None:
    lm = ScriptedLM([chat(reasoning="2 and 2 make 4.", answer="4")])
    pred = ChainOfThought("question -> answer: int", lm=lm)(question="2+2?")
    assert pred.answer == 4
    assert pred.reasoning == "2 and 2 make 4." and isinstance(pred.reasoning, Reasoning)
    assert not pred.reasoning.native
    assert list(pred.to_dict()) == ["reasoning", "answer"]
    assert "reasoning" in all_text(lm)


def native_lm(reasoning: str | None = "Two plus two is four.") -> ScriptedLM:
    return ScriptedLM(
        [{"text": chat(answer="4"), "reasoning": reasoning}],
        features={"reasoning", "stop", "json_object"},
    )


def test_native_reasoning_fills_the_field_from_the_provider() -> None:
    lm = native_lm()
    pred = ChainOfThought("question -> answer: int", lm=lm)(question="2+2?")
    assert pred.answer == 4
    assert pred.reasoning == "Two plus two is four." and pred.reasoning.native
    assert list(pred.to_dict()) == ["reasoning", "answer"]
    assert "[[ ## reasoning ## ]]" not in all_text(lm)  # the prompt did not ask for it


def test_native_reasoning_absent_is_none() -> None:
    pred = ChainOfThought("question -> answer: int", lm=native_lm(None))(question="2+2?")
    assert pred.reasoning is None and pred.answer == 4


@pytest.mark.parametrize("how", ["argument", "setting"])
def test_text_reasoning_can_be_forced(how: str) -> None:
    lm = ScriptedLM([chat(reasoning="written", answer="4")], features={"reasoning", "stop", "json_object"})
    if how == "argument":
        pred = ChainOfThought("question -> answer: int", lm=lm, native_reasoning=False)(question="q")
    else:
        with sf.context(native_reasoning=False):
            pred = ChainOfThought("question -> answer: int", lm=lm)(question="q")
    assert pred.reasoning == "written" and not pred.reasoning.native
    assert "reasoning" in all_text(lm)


def test_existing_reasoning_field_is_refused() -> None:
    with pytest.raises(ValueError, match="already has a `reasoning` field"):
        ChainOfThought("question -> reasoning, answer")


def test_demos_with_reasoning_are_shown() -> None:
    lm = ScriptedLM([chat(reasoning="r", answer="1")])
    cot = ChainOfThought(
        "question -> answer: int",
        lm=lm,
        demos=[{"question": "1+0?", "reasoning": "adding zero", "answer": 1}],
    )
    cot(question="q")
    assert "adding zero" in all_text(lm)
