"""The input type rule (issue 17, item 9): lossless conversions are accepted and converted,
anything else is an InputError naming the field; the same for Predict and Agent."""

from __future__ import annotations

import datetime

import pytest

import sigform as sf
from sigform.testing import ScriptedLM

SIG = "question: str, count: int, share: float, day: date, tags: list[str] -> answer"
GOOD = {"question": "q", "count": 1, "share": 0.5, "day": datetime.date(2024, 7, 22), "tags": ["a"]}


def _program() -> tuple[sf.Predict, ScriptedLM]:
    lm = ScriptedLM(["[[ ## answer ## ]]\nok\n[[ ## completed ## ]]"] * 4)
    return sf.Predict(SIG, lm=lm), lm


@pytest.mark.parametrize(
    ("field", "given", "converted"),
    [
        ("question", 42, "42"),
        ("count", "5", 5),
        ("count", 3.0, 3),
        ("share", 2, 2.0),
        ("day", "2024-07-22", datetime.date(2024, 7, 22)),
        ("tags", ("a", "b"), ["a", "b"]),
    ],
)
def test_lossless_conversions_are_accepted(field: str, given: object, converted: object) -> None:
    program, lm = _program()
    program(**{**GOOD, field: given})
    prompt = lm.calls[0].messages[-1]["content"]
    assert str(converted if not isinstance(converted, list) else converted[-1]) in prompt
    assert program._checker.check({**GOOD, field: given})[field] == converted


@pytest.mark.parametrize(
    ("field", "given"),
    [
        ("count", True),
        ("share", False),
        ("count", 3.5),
        ("count", "five"),
        ("question", ["a"]),
        ("question", {"a": 1}),
        ("question", None),
        ("tags", "a"),
    ],
)
def test_anything_else_is_an_input_error(field: str, given: object) -> None:
    program, lm = _program()
    with pytest.raises(sf.InputError) as info:
        program(**{**GOOD, field: given})
    assert f"input `{field}`" in str(info.value)
    assert lm.calls == []  # refused before any call


def test_agents_follow_the_same_rule() -> None:
    agent = sf.Agent("count: int -> answer", tools=[], lm=ScriptedLM([]))
    with pytest.raises(sf.InputError, match="a bool is not a number"):
        agent(count=True)
