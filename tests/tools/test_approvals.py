"""Approvals (decisions, ready approvers, terminal prompt) and running one turn of tool calls."""

from __future__ import annotations

import asyncio
import io
import threading

import pytest
from rich.console import Console

from sigform.errors import ToolError
from sigform.hooks import Callback
from sigform.settings import context
from sigform.tools import (
    ApprovalRequest,
    Decision,
    ScriptedApprover,
    TerminalApprover,
    Tool,
    ToolResult,
    auto_approve,
    auto_cancel,
    auto_reject,
)
from sigform.tools.approval import to_decision
from sigform.tools.runner import PendingCall, run_turn


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


class Recorder(Callback):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    def on_tool(self, event):  # type: ignore[no-untyped-def]
        self.events.append((event.status, event.tool, event.call_id))


def turn(calls, tools, **kw):  # type: ignore[no-untyped-def]
    pending = [PendingCall(name, args, f"c{i}") for i, (name, args) in enumerate(calls)]
    return asyncio.run(run_turn(pending, {t.name: t for t in tools}, **kw))


def test_to_decision():
    assert to_decision(True) is Decision.APPROVE
    assert to_decision(False) is Decision.REJECT
    assert to_decision("cancel") is Decision.CANCEL
    assert to_decision(" Yes ") is Decision.APPROVE
    with pytest.raises(ToolError, match="maybe"):
        to_decision("maybe")
    with pytest.raises(ToolError):
        to_decision(None)


def test_ready_approvers():
    request = ApprovalRequest(tool=Tool(add), args={"a": 1, "b": 2}, description="add(a=1, b=2)")
    assert auto_approve(request) is Decision.APPROVE
    assert auto_reject(request) is Decision.REJECT
    assert auto_cancel(request) is Decision.CANCEL
    scripted = ScriptedApprover(["approve", False])
    assert scripted(request) is Decision.APPROVE and scripted(request) is Decision.REJECT
    assert scripted.requests == [request, request]
    with pytest.raises(ToolError, match="no answer left"):
        scripted(request)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("y\n", Decision.APPROVE),
        ("n\n", Decision.REJECT),
        ("c\n", Decision.CANCEL),
        ("\n", Decision.REJECT),
        ("maybe\nyes\n", Decision.APPROVE),
    ],
)
def test_terminal_approver(typed: str, expected: Decision):
    out = io.StringIO()
    approver = TerminalApprover(Console(file=out, width=80), stream=io.StringIO(typed))
    tool = Tool(add, describe=lambda args: f"Compute {args['a']} + {args['b']}?")
    request = ApprovalRequest(
        tool=tool, args={"a": 1, "b": 2}, description=tool.describe_call({"a": 1, "b": 2})
    )
    assert approver(request) is expected
    shown = out.getvalue()
    assert "Compute 1 + 2?" in shown and "tool call: add" in shown
    assert "(stop the agent) [n]: " in shown  # the default answer is shown (rich read "[n]" as markup)


def test_terminal_approver_end_of_input_cancels():
    approver = TerminalApprover(Console(file=io.StringIO()), stream=io.StringIO(""))
    request = ApprovalRequest(tool=Tool(add), args={}, description="x")
    assert approver(request) is Decision.CANCEL


def test_turn_success_error_invalid_and_unknown_in_order():
    def fail(x: int) -> int:
        raise RuntimeError("broken")

    rec = Recorder()
    with context(callbacks=[rec]):
        out = turn(
            [("add", {"a": 1, "b": 2}), ("fail", {"x": 1}), ("add", {"a": "z"}), ("nope", {})],
            [Tool(add), Tool(fail)],
        )
    assert not out.cancelled
    assert [r.status for r in out.records] == ["success", "error", "error", "error"]
    assert out.records[0].result.value == 3 and out.records[0].args == {"a": 1, "b": 2}
    assert "RuntimeError: broken" in out.records[1].result.message
    assert "invalid arguments" in out.records[2].result.message and out.records[2].args is None
    assert "there is no tool `nope`" in out.records[3].result.message
    assert [r.call_id for r in out.records] == ["c0", "c1", "c2", "c3"]
    assert rec.events == [
        ("started", "add", "c0"),
        ("succeeded", "add", "c0"),
        ("started", "fail", "c1"),
        ("failed", "fail", "c1"),
        ("failed", "add", "c2"),
        ("failed", "nope", "c3"),
    ]


def test_turn_reject_then_continue():
    ran: list[int] = []

    def guarded(n: int) -> int:
        ran.append(n)
        return n

    approver = ScriptedApprover(["reject", "approve"])
    rec = Recorder()
    with context(callbacks=[rec]):
        out = turn(
            [("guarded", {"n": 1}), ("guarded", {"n": 2})],
            [Tool(guarded, requires_approval=True)],
            approver=approver,
        )
    assert ran == [2]
    assert [r.status for r in out.records] == ["rejected", "success"]
    assert out.records[0].approval is Decision.REJECT and out.records[1].approval is Decision.APPROVE
    assert "declined" in out.records[0].result.for_llm
    assert out.records[0].description == "guarded(n=1)"
    assert [s for s, _, _ in rec.events] == [
        "awaiting_approval",
        "rejected",
        "awaiting_approval",
        "started",
        "succeeded",
    ]
    assert [r.args for r in approver.requests] == [{"n": 1}, {"n": 2}]


def test_turn_cancel_stops_everything_after():
    ran: list[str] = []
    risky = Tool(lambda: ran.append("risky"), name="risky", requires_approval=True)
    free = Tool(lambda: ran.append("free"), name="free")
    out = turn(
        [("free", {}), ("risky", {}), ("free", {}), ("risky", {})],
        [risky, free],
        approver=ScriptedApprover(["cancel"]),
    )
    assert out.cancelled
    assert ran == ["free"]
    assert [r.status for r in out.records] == ["success", "cancelled", "cancelled", "cancelled"]
    assert out.records[1].approval is Decision.CANCEL and out.records[2].approval is None


def test_approval_rule_per_call_and_missing_approver():
    tool = Tool(add, requires_approval=lambda t, args: args["a"] > 10)
    out = turn([("add", {"a": 1, "b": 1})], [tool])  # no approver needed for this one
    assert out.records[0].result.value == 2
    with pytest.raises(ToolError, match="no approver"):
        turn([("add", {"a": 11, "b": 1})], [tool])
    out = turn([("add", {"a": 11, "b": 1})], [tool], approver=auto_reject)
    assert out.records[0].status == "rejected"


def test_async_approver():
    async def approver(request: ApprovalRequest) -> str:
        await asyncio.sleep(0)
        return "approve" if request.args["a"] == 1 else "reject"

    tool = Tool(add, requires_approval=True)
    out = turn([("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 1})], [tool], approver=approver)
    assert [r.status for r in out.records] == ["success", "rejected"]


def test_hooks_per_call_and_handlers_once():
    seen: list[str] = []

    def work(n: int) -> int:
        seen.append(f"run{n}")
        return n

    per_call = Tool(work, setup=lambda t: seen.append("setup"), on_exit=lambda t: seen.append("exit"))
    turn([("work", {"n": 1}), ("work", {"n": 2})], [per_call])
    assert seen == ["setup", "run1", "exit", "setup", "run2", "exit"]

    seen.clear()
    once = Tool(
        work, setup=lambda t: seen.append("setup"), on_exit=lambda t: seen.append("exit"), handlers_once=True
    )
    turn([("work", {"n": 1}), ("work", {"n": 2}), ("work", {"n": 3})], [once])
    assert seen == ["setup", "run1", "run2", "run3", "exit"]


def test_handlers_once_skips_setup_when_every_call_is_rejected():
    seen: list[str] = []
    tool = Tool(
        lambda: seen.append("run"),
        name="t",
        requires_approval=True,
        handlers_once=True,
        setup=lambda t: seen.append("setup"),
        on_exit=lambda t: seen.append("exit"),
    )
    out = turn([("t", {}), ("t", {})], [tool], approver=auto_reject)
    assert seen == [] and [r.status for r in out.records] == ["rejected", "rejected"]


def test_handlers_once_setup_failure_fails_each_call():
    def bad(t: Tool) -> None:
        raise OSError("no sandbox")

    seen: list[str] = []
    tool = Tool(
        lambda: seen.append("run"),
        name="t",
        handlers_once=True,
        setup=bad,
        on_exit=lambda t: seen.append("exit"),
    )
    out = turn([("t", {}), ("t", {})], [tool])
    assert [r.status for r in out.records] == ["error", "error"]
    assert all("no sandbox" in r.result.message for r in out.records)
    assert seen == []


def test_parallel_runs_safe_tools_together_and_keeps_result_order():
    barrier = threading.Barrier(2, timeout=5)

    def meet(tag: str) -> str:
        barrier.wait()  # only returns when both calls run at the same time
        return tag

    order: list[str] = []

    def after() -> str:
        order.append("after")
        return "done"

    safe = Tool(meet, safe=True)
    out = turn(
        [("meet", {"tag": "x"}), ("meet", {"tag": "y"}), ("after", {})], [safe, Tool(after)], parallel=True
    )
    assert [r.result.value for r in out.records] == ["x", "y", "done"]
    assert order == ["after"]


def test_sequential_by_default_even_for_safe_tools():
    active: list[int] = []
    peak: list[int] = []

    async def probe(n: int) -> int:
        active.append(n)
        peak.append(len(active))
        await asyncio.sleep(0.01)
        active.remove(n)
        return n

    out = turn([("probe", {"n": i}) for i in range(3)], [Tool(probe, safe=True)])
    assert [r.result.value for r in out.records] == [0, 1, 2]
    assert max(peak) == 1


def test_tool_returning_error_result_reports_failed_event():
    rec = Recorder()

    def soft() -> ToolResult:
        return ToolResult.error("not found")

    with context(callbacks=[rec]):
        out = turn([("soft", {})], [Tool(soft)])
    assert out.records[0].result.for_llm == "Error: not found"
    assert rec.events[-1][0] == "failed"


# what a model could put in an argument to repaint the approval prompt: move up and erase the
# line, return to its start, reverse the text that follows (bidi override), a line separator
HOSTILE = "notes.txt\x1b[1A\x1b[2K\r\u202eexe.txt\u2028\x9b2K"


def _shown(request: ApprovalRequest) -> str:
    out = io.StringIO()
    approver = TerminalApprover(Console(file=out, width=200), stream=io.StringIO("n\n"))
    assert approver(request) is Decision.REJECT
    return out.getvalue()


def _no_controls(shown: str) -> None:
    assert not any(c in shown for c in "\x1b\r\u202e\u2028\x9b"), repr(shown)


def test_terminal_approver_shows_control_characters_of_a_tool_call_escaped():
    def delete_file(path: str) -> str:
        """Delete a file."""
        return path

    tool = Tool(delete_file, requires_approval=True)
    args = {"path": HOSTILE}
    shown = _shown(ApprovalRequest(tool=tool, args=args, description=tool.describe_call(args)))
    _no_controls(shown)
    # the argument is shown as its repr: quoted, unambiguous, the same text the tool receives
    assert repr(HOSTILE) in shown


def test_terminal_approver_shows_control_characters_of_a_command_escaped():
    from pydantic import BaseModel

    from sigform.tools import CommandTool

    class PathArgs(BaseModel):
        path: str

    tool = CommandTool("cat_file", "d", [["cat", "${path}"]], args=PathArgs)
    args = {"path": HOSTILE}
    shown = _shown(ApprovalRequest(tool=tool, args=args, description=tool.describe_call(args)))
    _no_controls(shown)
    assert "$ cat $'notes.txt\\x1b[1A\\x1b[2K\\r\\u202eexe.txt\\u2028\\u009b2K'" in shown


def test_terminal_approver_escapes_a_custom_description_but_keeps_its_lines():
    tool = Tool(add, describe=lambda args: f"Add?\n  a = {args['a']}")
    args = {"a": HOSTILE, "b": 1}
    shown = _shown(ApprovalRequest(tool=tool, args=args, description=tool.describe_call(args)))
    _no_controls(shown)
    assert "Add?" in shown and "a = notes.txt\\x1b[1A" in shown
    # a request built by hand (another caller of the approver) is escaped as well
    raw = _shown(ApprovalRequest(tool=tool, args=args, description=f"add({HOSTILE})"))
    _no_controls(raw)
    assert "\\x1b[2K" in raw
