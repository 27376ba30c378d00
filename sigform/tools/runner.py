"""Running the tool calls of one LM turn: look up, validate, ask approval, run, report.

Calls run in the order the LM made them. With ``parallel=True`` a call to a tool marked ``safe``
starts without waiting for the safe calls before it; any other call waits until everything before
it has finished, so order-sensitive tools keep their order. Approvals are always asked one at a
time, in call order. Results come back in call order whatever finished first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sigform.errors import ToolArgumentsError, ToolError
from sigform.hooks import Callback
from sigform.tools._invoke import invoke
from sigform.tools.approval import ApprovalRequest, Approver, Decision, to_decision
from sigform.tools.events import emit_tool_event
from sigform.tools.result import ToolResult
from sigform.tools.tool import Tool
from sigform.tools.trajectory import CallRecord

__all__ = ["PendingCall", "TurnOutcome", "run_turn"]


@dataclass(frozen=True)
class PendingCall:
    """A call the LM asked for (``id`` is always set: the agent numbers calls that lack one)."""

    name: str
    arguments: Mapping[str, Any] | str
    id: str


@dataclass(frozen=True)
class TurnOutcome:
    """The records of one turn, in call order; ``cancelled`` when the approver said cancel."""

    records: tuple[CallRecord, ...]
    cancelled: bool


class _Hooks:
    """setup/on_exit bookkeeping for one turn (``handlers_once`` tools share one setup)."""

    def __init__(self) -> None:
        self.locks: dict[str, asyncio.Lock] = {}
        self.setup_result: dict[str, str | None] = {}  # tool name -> None (ok) or error text

    async def before(self, tool: Tool) -> str | None:
        if not tool.handlers_once:
            return await tool.run_hook("setup")
        lock = self.locks.setdefault(tool.name, asyncio.Lock())
        async with lock:
            if tool.name not in self.setup_result:
                self.setup_result[tool.name] = await tool.run_hook("setup")
            return self.setup_result[tool.name]

    async def after(self, tool: Tool) -> None:
        if not tool.handlers_once:
            await tool.run_hook("on_exit")

    async def finish(self, tools: Mapping[str, Tool]) -> None:
        for name, problem in self.setup_result.items():
            if problem is None:
                await tools[name].run_hook("on_exit")


class _Turn:
    def __init__(
        self,
        calls: Sequence[PendingCall],
        tools: Mapping[str, Tool],
        approver: Approver | None,
        step: int,
        parallel: bool,
        callbacks: Sequence[Callback] | None,
    ) -> None:
        self.calls = calls
        self.tools = tools
        self.approver = approver
        self.step = step
        self.parallel = parallel
        self.callbacks = callbacks
        self.records: list[CallRecord | None] = [None] * len(calls)
        self.hooks = _Hooks()

    def _event(self, status: Any, call: PendingCall, **kw: Any) -> None:
        emit_tool_event(
            status,
            tool=call.name,
            call_id=call.id,
            step=self.step,
            arguments=call.arguments,
            callbacks=self.callbacks,
            **kw,
        )

    def _finish(self, i: int, call: PendingCall, result: ToolResult, **kw: Any) -> None:
        record = CallRecord(tool=call.name, call_id=call.id, arguments=call.arguments, result=result, **kw)
        self.records[i] = record
        status = {"success": "succeeded", "error": "failed"}.get(result.status, result.status)
        self._event(status, call, args=record.args, result=result, description=record.description)

    async def _execute(
        self, i: int, call: PendingCall, tool: Tool, args: dict[str, object], **kw: object
    ) -> None:
        problem = await self.hooks.before(tool)
        if problem is not None:
            self._finish(i, call, ToolResult.error(problem), args=args, **kw)
            return
        self._event("started", call, args=args)
        try:
            result = await tool.execute(args)
        finally:
            await self.hooks.after(tool)
        self._finish(i, call, result, args=args, **kw)

    async def _decide(
        self, call: PendingCall, tool: Tool, args: Mapping[str, object]
    ) -> tuple[Decision, str]:
        description = tool.describe_call(args)
        if self.approver is None:
            raise ToolError(
                f"tool `{tool.name}` needs approval for {description!r} but no approver was given; pass "
                "approver=... to the Agent (sigform.tools.TerminalApprover() asks in the terminal, "
                "sigform.tools.auto_approve allows every call)"
            )
        self._event("awaiting_approval", call, args=args, description=description)
        request = ApprovalRequest(
            tool=tool, args=args, description=description, call_id=call.id, step=self.step
        )
        return to_decision(await invoke(self.approver, request)), description

    async def run(self) -> TurnOutcome:
        running: list[asyncio.Task[None]] = []
        cancelled = False
        try:
            for i, call in enumerate(self.calls):
                if cancelled:
                    self._finish(i, call, ToolResult.cancelled())
                    continue
                tool = self.tools.get(call.name)
                if tool is None:
                    known = ", ".join(f"`{n}`" for n in self.tools) or "none"
                    self._finish(i, call, ToolResult.error(f"there is no tool `{call.name}`; tools: {known}"))
                    continue
                try:
                    args = tool.validate(call.arguments)
                except ToolArgumentsError as exc:
                    self._finish(i, call, ToolResult.error(str(exc)))
                    continue
                decision, description = None, None
                if await tool.needs_approval(args):
                    decision, description = await self._decide(call, tool, args)
                    if decision is Decision.REJECT:
                        self._finish(
                            i,
                            call,
                            ToolResult.rejected(),
                            args=args,
                            approval=decision,
                            description=description,
                        )
                        continue
                    if decision is Decision.CANCEL:
                        cancelled = True
                        self._finish(
                            i,
                            call,
                            ToolResult.cancelled(),
                            args=args,
                            approval=decision,
                            description=description,
                        )
                        continue
                work = self._execute(i, call, tool, args, approval=decision, description=description)
                if self.parallel and tool.safe:
                    running.append(asyncio.ensure_future(work))
                    continue
                if running:  # an unsafe call waits for everything before it
                    await asyncio.gather(*running)
                    running.clear()
                await work
            if running:
                await asyncio.gather(*running)
        finally:
            for task in running:
                if not task.done():
                    task.cancel()
            await self.hooks.finish(self.tools)
        records = tuple(r for r in self.records if r is not None)
        assert len(records) == len(self.calls)  # every call is answered: providers require it
        return TurnOutcome(records, cancelled)


async def run_turn(
    calls: Sequence[PendingCall],
    tools: Mapping[str, Tool],
    *,
    approver: Approver | None = None,
    step: int = 0,
    parallel: bool = False,
    callbacks: Sequence[Callback] | None = None,
) -> TurnOutcome:
    """Run one turn's calls (see module docs). Raises :class:`ToolError` only for misuse (a call
    that needs approval without an approver, an approver answering nonsense)."""
    return await _Turn(calls, tools, approver, step, parallel, callbacks).run()
