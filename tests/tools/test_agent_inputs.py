"""Agent inputs are checked like a program's, before any LM call; per-call LM."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM


def _finishing_lm() -> ScriptedLM:
    return ScriptedLM(
        [Completion(text="", tool_calls=(ToolCall("finish", {"y": "ok"}, "c1"),))], features={"tools"}
    )


def _noop(a: int) -> int:
    """Return a."""
    return a


def _four_lm() -> ScriptedLM:
    return ScriptedLM(
        [
            Completion(
                text="", tool_calls=(ToolCall("finish", {"answer": "4"}, "id_1"),), finish_reason="tool_calls"
            )
        ],
        features={"tools", "stop", "json_object"},
    )


def test_agent_inputs_are_type_checked_before_any_lm_call() -> None:
    # only names were checked: "five" for an int input went to the model
    lm = _finishing_lm()
    agent = sf.Agent("x: int -> y", tools=[_noop], lm=lm)
    with pytest.raises(sf.InputError, match=r"`x` expects int"):
        agent(x="five")
    assert lm.calls == []
    assert agent(x="5").y == "ok"  # lax conversion, as for Predict
    assert "5" in lm.last_messages[-1]["content"]


def test_agent_optional_input_may_be_left_out() -> None:
    lm = _finishing_lm()
    agent = sf.Agent("x: int, note: str | None -> y", tools=[_noop], lm=lm)
    assert agent(x=1).y == "ok"


def test_agent_checks_inputs_against_a_replaced_signature() -> None:
    lm = _finishing_lm()
    agent = sf.Agent("x: int -> y", tools=[_noop], lm=lm)
    agent.signature = sf.make_signature("x: str -> y")
    assert agent(x="five").y == "ok"


@pytest.mark.parametrize("how", ["call", "acall"])
def test_agent_takes_a_per_call_lm(how: str) -> None:
    import asyncio

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    own, per_call = ScriptedLM([]), _four_lm()
    agent = sf.Agent("question -> answer: int", tools=[add], lm=own)
    if how == "call":
        pred = agent(question="2+2?", lm=per_call)
    else:
        pred = asyncio.run(agent.acall(question="2+2?", lm=per_call))
    assert pred.answer == 4 and own.calls == [] and len(per_call.calls) == 1
    # the per-call LM decides the protocol too (native tools here, though `own` has none)
    assert "tools" in per_call.calls[0].kwargs
