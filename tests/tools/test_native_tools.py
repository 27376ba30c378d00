"""list[Tool] inputs and ToolCalls outputs: request tools, native calls, validation of tool inputs."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.errors import FieldValueError
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.tools import Tool
from sigform.tools.native import calls_from_completion, request_tools, tools_in_inputs


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Pick(sf.Signature):
    """Pick the tool calls that answer the question."""

    question: str = sf.InputField()
    tools: list[Tool] = sf.InputField()
    calls: sf.ToolCalls = sf.OutputField()


def test_request_tools_and_native_calls():
    tool = Tool(add)
    inputs = {"question": "1+2", "tools": [tool]}
    assert tools_in_inputs(Pick, inputs) == [tool]
    assert request_tools(Pick, inputs) == [tool.to_openai()]
    assert request_tools(sf.make_signature("question -> answer"), {"question": "x"}) == []
    completion = Completion(text="", tool_calls=(ToolCall("add", '{"a": 1, "b": 2}', "c1"),))
    out = calls_from_completion(Pick, completion)
    call = out["calls"].tool_calls[0]
    assert (call.name, call.args, call.id) == ("add", {"a": 1, "b": 2}, "c1")
    with pytest.raises(FieldValueError):
        calls_from_completion(Pick, Completion(text="", tool_calls=(ToolCall("add", "{oops", "c2"),)))


def test_list_of_tools_is_a_valid_input_type_and_functions_are_wrapped():
    calls = '{"tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}'
    reply = f"[[ ## calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"
    lm = ScriptedLM([reply])
    pred = sf.Predict(Pick, lm=lm)(question="1+2", tools=[add])  # a plain function is accepted
    assert pred.calls.tool_calls[0].name == "add"
    with pytest.raises(sf.InputError):
        sf.Predict(Pick, lm=ScriptedLM([]))(question="x", tools=[42])


def test_tool_renders_as_its_description():
    from sigform.types import render_value

    assert "`add`: Add two integers." in render_value(Tool(add))
