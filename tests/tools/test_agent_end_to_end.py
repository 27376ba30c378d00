"""Agent end to end through litellm against loopback fake providers returning native tool calls.

The fakes answer in each provider's real wire format, so these tests check what the scripted
tests cannot: that tool schemas reach the provider in its own shape, that native tool calls come
back with their ids, and that the history (assistant tool calls, tool results) is sent back in the
shape the provider needs.
"""

from __future__ import annotations

import sigform as sf
from sigform.testing.providers import AnthropicFake, OpenAIChatFake, Reply, ToolCall
from sigform.tools import Agent, ScriptedApprover, Tool


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


SCRIPT = (
    Reply(text="Adding first.", tool_calls=[ToolCall("add", {"a": 2, "b": 3}, "call_add_1")]),
    Reply(
        tool_calls=[
            ToolCall("multiply", {"a": 5, "b": 4}, "call_mul_2"),
            ToolCall("add", {"a": 1, "b": 1}, "call_add_3"),
        ]
    ),
    Reply(tool_calls=[ToolCall("finish", {"answer": 20}, "call_fin_4")]),
)


def lm_for(fake: object, model: str) -> sf.LM:
    return sf.LM(
        fake.model(model),
        api_base=fake.api_base,
        api_key="test-key",
        cache=False,  # type: ignore[attr-defined]
        fast_path=False,
        num_retries=0,
    )


def run_agent(fake: object, model: str, **kw: object) -> sf.Prediction:
    lm = lm_for(fake, model)
    assert lm.supports("tools")
    agent = Agent("question -> answer: int", tools=[add, Tool(multiply, requires_approval=True)], lm=lm, **kw)
    return agent(question="(2 + 3) * 4?")


def test_openai_native_tool_calls_round_trip():
    with OpenAIChatFake(*SCRIPT) as fake:
        pred = run_agent(fake, "gpt-4o-mini", approver=ScriptedApprover(["approve"]))
        requests = list(fake.requests)
    assert pred.answer == 20 and pred.trajectory.status == "completed"
    assert [c.call_id for c in pred.trajectory.calls] == [
        "call_add_1",
        "call_mul_2",
        "call_add_3",
        "call_fin_4",
    ]
    first = requests[0].json
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "multiply", "finish"]
    assert first["tools"][0]["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    messages = requests[2].json["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "tool"]
    assert messages[2]["tool_calls"][0]["id"] == "call_add_1"
    assert messages[2]["tool_calls"][0]["function"]["name"] == "add"
    assert messages[3]["tool_call_id"] == "call_add_1" and messages[3]["content"] == "5"
    assert [m["tool_call_id"] for m in messages[5:]] == ["call_mul_2", "call_add_3"]
    assert [m["content"] for m in messages[5:]] == ["20", "2"]
    assert "secret" not in str(requests[0].headers)


def test_anthropic_native_tool_calls_round_trip_and_reject():
    with AnthropicFake(*SCRIPT) as fake:
        pred = run_agent(fake, "claude-sonnet-4-5", approver=ScriptedApprover(["reject"]))
        requests = list(fake.requests)
    assert pred.answer == 20
    assert [c.status for c in pred.trajectory.calls] == ["success", "rejected", "success", "success"]
    first = requests[0].json
    assert [t["name"] for t in first["tools"]] == ["add", "multiply", "finish"]
    assert first["tools"][0]["input_schema"]["properties"]["b"]["type"] == "integer"
    messages = requests[2].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for b in messages[1]["content"] if b["type"] == "tool_use"]
    assert uses == [{"type": "tool_use", "id": "call_add_1", "name": "add", "input": {"a": 2, "b": 3}}]
    results = [b for b in messages[4]["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["call_mul_2", "call_add_3"]
    rejected = str(results[0]["content"])
    assert "declined" in rejected
    assert "2" in str(results[1]["content"])
