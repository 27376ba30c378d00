"""Agent loop with scripted LMs: native and text tool calling, every stop path, approvals, events."""

from __future__ import annotations

import asyncio
import json

import pytest

import sigform as sf
from sigform.errors import InputError, SignatureError, ToolError
from sigform.hooks import Callback
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.tools import Agent, Decision, ScriptedApprover, Tool, auto_approve, auto_reject

NATIVE = {"tools", "stop", "json_object"}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def calls(*items: tuple[str, dict | str] | tuple[str, dict | str, str], text: str = "") -> Completion:
    made = tuple(ToolCall(i[0], i[1], i[2] if len(i) > 2 else None) for i in items)
    return Completion(text=text, tool_calls=made, finish_reason="tool_calls")


def say(thought: str, *items: tuple[str, dict]) -> str:
    return json.dumps({"thought": thought, "tool_calls": [{"name": n, "args": a} for n, a in items]})


class Events(Callback):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def on_tool(self, event):  # type: ignore[no-untyped-def]
        self.seen.append((event.status, event.tool))


def test_public_name():
    assert sf.Agent is Agent


def test_native_success_path_and_history_shape():
    lm = ScriptedLM(
        [
            calls(("add", {"a": 3, "b": 4}, "id_1"), text="First add."),
            calls(("multiply", '{"a": 7, "b": 5}', "id_2")),
            calls(("finish", {"answer": "35"}, "id_3")),
        ],
        features=NATIVE,
    )
    agent = Agent("question -> answer: float", tools=[add, multiply], lm=lm, max_steps=5)
    pred = agent(question="What is (3 + 4) * 5?")
    assert pred.answer == 35.0 and isinstance(pred.answer, float)
    traj = pred.trajectory
    assert traj.status == "completed" and traj.completed and len(traj) == 3
    assert [c.tool for c in traj.calls] == ["add", "multiply", "finish"]
    assert traj.calls[0].result.value == 7 and traj.calls[1].result.value == 35.0
    assert traj[0].thought == "First add."

    first = lm.calls[0]
    assert [t["function"]["name"] for t in first.kwargs["tools"]] == ["add", "multiply", "finish"]
    finish_schema = first.kwargs["tools"][2]["function"]["parameters"]
    assert finish_schema["properties"]["answer"]["type"] == "number" and finish_schema["required"] == [
        "answer"
    ]
    assert "What is (3 + 4) * 5?" in first.messages[1]["content"]

    history = lm.calls[2].messages
    assistant = history[2]
    assert assistant["role"] == "assistant" and assistant["content"] == "First add."
    assert assistant["tool_calls"] == [
        {"id": "id_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}
    ]
    assert history[3] == {"role": "tool", "tool_call_id": "id_1", "name": "add", "content": "7"}
    assert history[4]["tool_calls"][0]["function"]["arguments"] == '{"a": 7, "b": 5}'  # raw string kept
    assert history[5]["tool_call_id"] == "id_2" and history[5]["content"] == "35.0"
    assert pred._meta.adapter == "Agent[native]"


def test_text_protocol_when_the_model_has_no_native_tools():
    lm = ScriptedLM(
        [
            "Let me add.\n```json\n" + say("add them", ("add", {"a": 2, "b": 2})) + "\n```",
            say("done", ("finish", {"answer": 4})),
        ]
    )
    pred = Agent("question -> answer: int", tools=[add], lm=lm)(question="2+2?")
    assert pred.answer == 4 and pred.trajectory.status == "completed"
    system = lm.calls[0].messages[0]["content"]
    assert "`add`: Add two integers." in system and '"tool_calls"' in system and "`finish`" in system
    assert "tools" not in lm.calls[0].kwargs
    followup = lm.calls[1].messages[-1]
    assert followup["role"] == "user" and "[call_1_1] add -> success:\n4" in followup["content"]
    assert pred.trajectory[0].thought == "add them"
    assert pred._meta.adapter == "Agent[text]"


def test_unreadable_text_reply_is_fed_back_and_counts_as_a_step():
    lm = ScriptedLM(["I think the answer is 4.", say("ok", ("finish", {"answer": 4}))])
    pred = Agent("question -> answer: int", tools=[add], lm=lm)(question="2+2?")
    assert pred.answer == 4
    assert "could not be read" in pred.trajectory[0].note
    assert "could not be read" in lm.calls[1].messages[-1]["content"]
    assert lm.calls[1].messages[-2] == {"role": "assistant", "content": "I think the answer is 4."}


def test_native_reply_without_calls_is_nudged():
    lm = ScriptedLM([Completion(text="The answer is 4"), calls(("finish", {"answer": 4}))], features=NATIVE)
    pred = Agent("question -> answer: int", tools=[add], lm=lm)(question="2+2?")
    assert pred.answer == 4 and len(pred.trajectory) == 2
    assert "did not call a tool" in lm.calls[1].messages[-1]["content"]


def test_tool_error_and_invalid_arguments_go_back_to_the_lm():
    def divide(a: float, b: float) -> float:
        """Divide."""
        return a / b

    lm = ScriptedLM(
        [
            calls(
                ("divide", {"a": 1, "b": 0}, "c1"), ("divide", {"a": "one", "b": 2}, "c2"), ("nope", {}, "c3")
            ),
            calls(("divide", {"a": 1, "b": 4}, "c4")),
            calls(("finish", {"answer": 0.25}, "c5")),
        ],
        features=NATIVE,
    )
    pred = Agent("question -> answer: float", tools=[divide], lm=lm)(question="1/0?")
    assert pred.answer == 0.25
    first = pred.trajectory[0].calls
    assert [c.status for c in first] == ["error", "error", "error"]
    tool_msgs = [m for m in lm.calls[1].messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3"]
    assert tool_msgs[0]["content"] == "Error: ZeroDivisionError: float division by zero"
    assert (
        "invalid arguments for tool `divide`" in tool_msgs[1]["content"] and "`a`" in tool_msgs[1]["content"]
    )
    assert "there is no tool `nope`" in tool_msgs[2]["content"]


def test_invalid_final_answer_is_reported_and_retried():
    lm = ScriptedLM(
        [
            calls(("finish", {"answer": "many"}, "f1")),
            calls(("finish", {"answer": 3, "extra": 1}, "f2")),
            calls(("finish", {"answer": 3}, "f3")),
        ],
        features=NATIVE,
    )
    pred = Agent("question -> answer: int", tools=[add], lm=lm)(question="?")
    assert pred.answer == 3 and len(pred.trajectory) == 3
    first_error = lm.calls[1].messages[-1]["content"]
    assert first_error.startswith("Error: invalid final answer") and "answer" in first_error
    assert "unknown output `extra`" in lm.calls[2].messages[-1]["content"]


def test_finish_with_other_calls_must_come_alone():
    lm = ScriptedLM(
        [
            calls(("add", {"a": 1, "b": 1}, "a"), ("finish", {"answer": 9}, "b")),
            calls(("finish", {"answer": 2})),
        ],
        features=NATIVE,
    )
    pred = Agent("question -> answer: int", tools=[add], lm=lm)(question="?")
    assert pred.answer == 2
    first = pred.trajectory[0].calls
    assert [c.status for c in first] == ["success", "error"] and "alone" in first[1].result.message


def test_several_calls_in_one_turn_run_in_order_with_handlers_once():
    seen: list[str] = []

    def note(text: str) -> str:
        seen.append(text)
        return "ok"

    tool = Tool(
        note, handlers_once=True, setup=lambda t: seen.append("setup"), on_exit=lambda t: seen.append("exit")
    )
    lm = ScriptedLM(
        [
            calls(("note", {"text": "a"}), ("note", {"text": "b"}), ("note", {"text": "c"})),
            calls(("note", {"text": "d"})),
            calls(("finish", {"answer": "done"})),
        ],
        features=NATIVE,
    )
    pred = Agent("task -> answer", tools=[tool], lm=lm)(task="write")
    assert seen == ["setup", "a", "b", "c", "exit", "setup", "d", "exit"]
    ids = [c.call_id for c in pred.trajectory.calls]
    assert ids == ["call_1_1", "call_1_2", "call_1_3", "call_2_1", "call_3_1"]  # generated ids, unique


def test_async_tools_and_acall():
    async def fetch(key: str) -> str:
        """Fetch a value."""
        await asyncio.sleep(0)
        return key.upper()

    lm = ScriptedLM([calls(("fetch", {"key": "x"})), calls(("finish", {"answer": "X"}))], features=NATIVE)
    agent = Agent("key -> answer", tools=[fetch], lm=lm)
    pred = asyncio.run(agent.acall(key="x"))
    assert pred.answer == "X" and pred.trajectory.calls[0].result.value == "X"


def test_reject_tells_the_lm_and_continues():
    ran: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    tool = Tool(delete, requires_approval=True, describe=lambda args: f"Delete {args['path']}?")
    approver = ScriptedApprover(["reject"])
    lm = ScriptedLM(
        [calls(("delete", {"path": "/etc"}, "d1")), calls(("finish", {"answer": "not allowed"}))],
        features=NATIVE,
    )
    events = Events()
    pred = Agent("task -> answer", tools=[tool], lm=lm, approver=approver, callbacks=[events])(task="clean")
    assert ran == [] and pred.answer == "not allowed" and pred.trajectory.status == "completed"
    record = pred.trajectory.calls[0]
    assert record.approval is Decision.REJECT and record.status == "rejected"
    assert record.description == "Delete /etc?"
    assert approver.requests[0].description == "Delete /etc?" and approver.requests[0].step == 1
    tool_msg = lm.calls[1].messages[-1]
    assert tool_msg["role"] == "tool" and "declined" in tool_msg["content"]
    assert events.seen == [("awaiting_approval", "delete"), ("rejected", "delete")]


def test_cancel_ends_the_run_with_a_clear_status():
    ran: list[str] = []
    tool = Tool(lambda path: ran.append(path), name="delete", requires_approval=True)
    free = Tool(lambda: ran.append("free"), name="free")
    lm = ScriptedLM([calls(("delete", {"path": "a"}), ("free", {}))], features=NATIVE)
    events = Events()
    with sf.context(callbacks=[events]):
        pred = Agent("task -> answer", tools=[tool, free], lm=lm, approver=ScriptedApprover(["cancel"]))(
            task="x"
        )
    assert ran == []
    assert pred.trajectory.status == "cancelled" and not pred.trajectory.completed
    assert pred.answer is None
    assert [c.status for c in pred.trajectory.calls] == ["cancelled", "cancelled"]
    assert events.seen == [("awaiting_approval", "delete"), ("cancelled", "delete"), ("cancelled", "free")]
    assert len(lm.calls) == 1  # no further LM call after cancel


def test_max_steps():
    lm = ScriptedLM([calls(("add", {"a": 1, "b": 1})) for _ in range(3)], features=NATIVE)
    pred = Agent("question -> answer: int", tools=[add], lm=lm, max_steps=3)(question="loop")
    assert pred.trajectory.status == "max_steps" and pred.answer is None
    assert len(pred.trajectory) == 3 and len(lm.calls) == 3


def test_approval_rule_and_approver_from_settings():
    tool = Tool(add, requires_approval=lambda t, args: args["a"] > 100)
    lm = ScriptedLM(
        [calls(("add", {"a": 1, "b": 1}), ("add", {"a": 500, "b": 1})), calls(("finish", {"answer": 2}))],
        features=NATIVE,
    )
    with sf.context(approver=auto_reject):
        pred = Agent("question -> answer: int", tools=[tool], lm=lm)(question="?")
    assert [c.status for c in pred.trajectory.calls[:2]] == ["success", "rejected"]
    assert pred.trajectory.calls[0].approval is None and pred.trajectory.calls[1].approval is Decision.REJECT


def test_missing_approver_fails_before_any_lm_call():
    lm = ScriptedLM([], features=NATIVE)
    agent = Agent("task -> answer", tools=[Tool(add, requires_approval=True)], lm=lm)
    with pytest.raises(ToolError, match="no approver"):
        agent(task="x")
    assert lm.calls == []


def test_events_for_success_and_failure():
    def boom() -> None:
        raise RuntimeError("x")

    events = Events()
    lm = ScriptedLM(
        [calls(("add", {"a": 1, "b": 2}), ("boom", {})), calls(("finish", {"answer": 3}))], features=NATIVE
    )
    Agent("q -> answer: int", tools=[add, boom], lm=lm, callbacks=[events])(q="?")
    assert events.seen == [("started", "add"), ("succeeded", "add"), ("started", "boom"), ("failed", "boom")]


def test_tool_system_prompt_is_sent_only_with_the_tool():
    tool = Tool(add, system_prompt="ADD-NOTES: use add for sums only.")
    lm = ScriptedLM([calls(("finish", {"answer": 1}))] * 2, features=NATIVE)
    Agent("q -> answer: int", tools=[tool], lm=lm)(q="?")
    assert "ADD-NOTES" in lm.calls[0].messages[0]["content"]
    Agent("q -> answer: int", tools=[multiply], lm=lm)(q="?")
    assert "ADD-NOTES" not in lm.calls[1].messages[0]["content"]


def test_parallel_tools_setting():
    import threading

    barrier = threading.Barrier(2, timeout=5)

    def meet(tag: str) -> str:
        barrier.wait()
        return tag

    lm = ScriptedLM(
        [calls(("meet", {"tag": "a"}), ("meet", {"tag": "b"})), calls(("finish", {"answer": "ab"}))],
        features=NATIVE,
    )
    with sf.context(parallel_tools=True):
        pred = Agent("q -> answer", tools=[Tool(meet, safe=True)], lm=lm)(q="?")
    assert [c.result.value for c in pred.trajectory.calls[:2]] == ["a", "b"]


def test_construction_errors():
    with pytest.raises(ToolError, match="reserved"):
        Agent("q -> a", tools=[Tool(add, name="finish")])
    with pytest.raises(ToolError, match="unique"):
        Agent("q -> a", tools=[add, Tool(multiply, name="add")])
    with pytest.raises(SignatureError, match="trajectory"):
        Agent("q -> trajectory", tools=[add])
    with pytest.raises(ValueError):
        Agent("q -> a", tools=[add], max_steps=0)
    with pytest.raises(InputError, match="missing"):
        Agent("q -> a", tools=[add], lm=ScriptedLM([]))()


def test_trajectory_serialises():
    lm = ScriptedLM([calls(("add", {"a": 1, "b": 2})), calls(("finish", {"answer": 3}))], features=NATIVE)
    pred = Agent("q -> answer: int", tools=[add], lm=lm, approver=auto_approve)(q="?")
    data = json.loads(json.dumps(pred.trajectory.to_list()))
    assert data[0]["calls"][0]["args"] == {"a": 1, "b": 2}
    assert data[0]["calls"][0]["result"] == {"status": "success", "for_llm": "3"}
    assert "add(a=1, b=2)" in pred.trajectory.render()
