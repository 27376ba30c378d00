"""``Agent``: think, call tools, read their results, and finish with the signature's typed outputs.

::

    agent = sf.Agent("question -> answer: float", tools=[add, multiply], max_steps=6)
    pred = agent(question="What is (3 + 4) * 5?")   # per call: agent(..., lm=other_lm)
    pred.answer                    # 35.0
    pred.trajectory.status         # "completed" | "max_steps" | "cancelled"
    pred.trajectory.calls          # every call: tool, arguments, approval, result

Each step is one LM request. Models with native function calling get the tools in the request;
others get them described in the prompt and answer in JSON (see :mod:`sigform.tools.protocol`).
The LM ends by calling ``finish`` with the output fields, which are validated like any parsed
output; an invalid final answer is sent back to it as an error. Calls run in order (concurrently
for ``safe`` tools when ``parallel_tools`` is on), each needing approval when its tool says so.
The run stops at the final answer, at ``max_steps`` (outputs are None) or when the approver
cancels (outputs are None); ``pred.trajectory.status`` says which.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sigform import jsonvalue
from sigform.conversation import Layout, asend
from sigform.errors import FieldValueError, SignatureError, ToolError
from sigform.hooks import Callback
from sigform.lm.interface import Completion, Usage
from sigform.message import Message
from sigform.predict.inputs import InputChecker, check_options
from sigform.predict.module import Module
from sigform.predict.predict import SignatureLike, default_lm, ensure_signature
from sigform.settings import check_component, get_setting
from sigform.signatures import Signature
from sigform.signatures.prediction import Prediction, PredictionMeta
from sigform.tools._invoke import run_sync
from sigform.tools.approval import Approver
from sigform.tools.protocol import FINISH, NativeProtocol, TextProtocol, Turn, system_prompt, user_prompt
from sigform.tools.result import ToolResult
from sigform.tools.runner import PendingCall, run_turn
from sigform.tools.tool import Tool, as_tool
from sigform.tools.trajectory import CallRecord, Step, Trajectory

if TYPE_CHECKING:
    from sigform.lm.interface import LMProtocol

__all__ = ["Agent"]


class Agent(Module):
    """A ReAct-style tool-using program (see the module docstring).

    Args:
        signature: what the agent is given and must produce (class, string or dict form).
        tools: :class:`Tool` objects or plain functions (wrapped with :class:`Tool`).
        max_steps: LM requests allowed before the run stops with status ``"max_steps"``.
        approver: answers approval requests (else the ``approver`` setting). Needed as soon as a
            call requires approval; a tool with ``requires_approval=True`` and no approver is an
            error before anything runs.
        lm: the model (else the ``lm`` setting, else ``sigform.LM()``).
        native: force native (True) or text (False) tool calling; default: ``lm.supports("tools")``.
        parallel_tools: run consecutive calls of ``safe`` tools concurrently (else the
            ``parallel_tools`` setting, default False).
        callbacks: hooks for this agent's calls: active while it runs, they see its module, LM and
            tool events, each once.
        **lm_kwargs: request options for every LM call (``temperature=0``, ...).
    """

    def __init__(
        self,
        signature: SignatureLike,
        tools: Sequence[Tool | Callable[..., object]],
        *,
        max_steps: int = 10,
        approver: Approver | None = None,
        lm: LMProtocol | None = None,
        native: bool | None = None,
        parallel_tools: bool | None = None,
        callbacks: Sequence[Callback] | None = None,
        **lm_kwargs: object,
    ) -> None:
        self.signature = ensure_signature(signature)
        if "trajectory" in self.signature.fields:
            raise SignatureError("Agent: the field name `trajectory` is reserved for the agent's trajectory")
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.tools: dict[str, Tool] = {}
        for value in tools:
            tool = as_tool(value)
            if tool.name == FINISH:
                raise ToolError(f"tool name `{FINISH}` is reserved: the agent uses it for the final answer")
            if tool.name in self.tools:
                raise ToolError(
                    f"two tools are named `{tool.name}` ({self.tools[tool.name]!r} and {tool!r}); tool "
                    "names must be unique (an MCP server's tools take a prefix: MCPClient(..., prefix='x_'))"
                )
            self.tools[tool.name] = tool
        self.max_steps = max_steps
        self.approver = approver
        self.lm = lm
        self.native = native
        self.parallel_tools = parallel_tools
        self.callbacks = list(callbacks) if callbacks else None
        check_component("lm", lm, type(self).__name__)
        if lm_kwargs:
            check_options(type(self), lm_kwargs)
        self.config: dict[str, Any] = dict(lm_kwargs)

    # a property, as on Predict, so that replacing the signature also replaces its input checker
    @property
    def signature(self) -> type[Signature]:
        return self._signature

    @signature.setter
    def signature(self, value: object) -> None:
        self._signature = ensure_signature(value)
        self._checker = InputChecker(self._signature)

    # -- running ----------------------------------------------------------------------------------
    def forward(self, *, lm: LMProtocol | None = None, **inputs: object) -> Prediction:
        """Run the agent to its final answer (or until it stops); see :meth:`aforward`."""
        return run_sync(lambda: self.aforward(lm=lm, **inputs))

    async def aforward(self, *, lm: LMProtocol | None = None, **inputs: object) -> Prediction:
        """Async run: returns a :class:`Prediction` with the outputs and ``trajectory``.

        ``lm=`` uses that model for this call (over the agent's, the setting's and the default),
        as a program's per-call ``lm=`` does; it also decides native or text tool calling."""
        # checked like a program's inputs (names and types) before anything is sent; the prompt
        # shows the inputs given, as validated
        checked = self._checker.check(inputs)
        inputs = {name: value for name, value in checked.items() if name in inputs}
        if lm is None:
            lm = self.lm or get_setting("lm") or default_lm()
        approver = self.approver if self.approver is not None else get_setting("approver")
        always = [t.name for t in self.tools.values() if t.requires_approval is True]
        if always and approver is None:
            raise ToolError(
                f"tool(s) {always} require approval but the agent has no approver; pass approver=... "
                "(sigform.tools.TerminalApprover() asks in the terminal; sigform.tools.auto_approve allows "
                "every call)"
            )
        native = self.native if self.native is not None else bool(lm.supports("tools"))
        images = bool(lm.supports("multimodal"))
        protocol = NativeProtocol(images) if native else TextProtocol(images)
        parallel = (
            self.parallel_tools if self.parallel_tools is not None else bool(get_setting("parallel_tools"))
        )
        return await _Run(self, lm, protocol, approver, parallel, inputs).go()

    def __repr__(self) -> str:
        return f"Agent({self.signature.signature!r}, tools={list(self.tools)}, max_steps={self.max_steps})"


class _Run:
    """State of one agent run."""

    def __init__(
        self,
        agent: Agent,
        lm: object,
        protocol: NativeProtocol | TextProtocol,
        approver: Approver | None,
        parallel: bool,
        inputs: Mapping[str, object],
    ) -> None:
        self.agent = agent
        self.signature = agent.signature
        self.lm = lm
        self.protocol = protocol
        self.approver = approver
        self.parallel = parallel
        tools = list(agent.tools.values())
        self.messages: list[Message] = [
            {"role": "system", "content": system_prompt(self.signature, tools, native=protocol.native)},
            {"role": "user", "content": user_prompt(self.signature, inputs)},
        ]
        self.kwargs = {**agent.config, **protocol.request_kwargs(self.signature, tools)}
        self.trajectory = Trajectory()
        self.step_starts: list[int] = []  # index of each step's first message
        self.usage = Usage()
        self.last: Completion | None = None

    async def go(self) -> Prediction:
        for step in range(1, self.agent.max_steps + 1):
            # sent fitted to the context window: whole steps dropped oldest first (see sigform.conversation)
            completions = await asend(self.lm, list(self.messages), self.kwargs, layout=self._layout())
            if not completions:
                raise ToolError("the LM returned no completion")
            completion = self.last = completions[0]
            self.usage = self.usage + completion.usage
            reply = self.protocol.read(completion, step)
            if reply.problem is not None:
                self.trajectory.steps.append(Step(step, reply.thought, note=reply.problem))
                self.step_starts.append(len(self.messages))
                self.messages += self.protocol.history(completion, reply, [])
                continue
            outputs, records, cancelled = await self._turn(reply, step)
            self.trajectory.steps.append(Step(step, reply.thought, tuple(records)))
            self.step_starts.append(len(self.messages))
            self.messages += self.protocol.history(completion, reply, records)
            if outputs is not None:
                return self._prediction("completed", outputs)
            if cancelled:
                return self._prediction("cancelled", None)
        return self._prediction("max_steps", None)

    def _layout(self) -> Layout:
        """System and task are the fixed prefix; each step's messages one prunable unit."""
        bounds = [*self.step_starts, len(self.messages)]
        return Layout(2, tuple(tuple(range(a, b)) for a, b in itertools.pairwise(bounds) if b > a))

    async def _turn(self, reply: Turn, step: int) -> tuple[dict[str, object] | None, list[CallRecord], bool]:
        finish = [c for c in reply.calls if c.name == FINISH]
        others = [c for c in reply.calls if c.name != FINISH]
        outcome = await run_turn(
            others,
            self.agent.tools,
            approver=self.approver,
            step=step,
            parallel=self.parallel,
            callbacks=self.agent.callbacks,
        )
        by_id = {r.call_id: r for r in outcome.records}
        outputs: dict[str, object] | None = None
        for call in finish:
            if others or len(finish) > 1:
                result = ToolResult.error(f"call `{FINISH}` alone, after the other tools' results are in")
            elif outcome.cancelled:
                result = ToolResult.cancelled()
            else:
                outputs, result = self._finish(call)
            by_id[call.id] = CallRecord(
                tool=FINISH, call_id=call.id, arguments=call.arguments, result=result, args=outputs
            )
        return outputs, [by_id[c.id] for c in reply.calls], outcome.cancelled

    def _finish(self, call: PendingCall) -> tuple[dict[str, object] | None, ToolResult]:
        """Validate the final answer; an invalid one goes back to the LM as an error."""
        from sigform.types import coerce_fields

        arguments: object = call.arguments
        if isinstance(arguments, str):
            try:
                arguments = jsonvalue.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return None, ToolResult.error(f"the final answer is not valid JSON ({exc.msg})")
        if not isinstance(arguments, Mapping):
            return None, ToolResult.error("the final answer must be a JSON object of the output fields")
        outputs = self.signature.output_fields
        problems = [f"missing output `{n}`" for n in outputs if n not in arguments]
        problems += [f"unknown output `{n}`" for n in arguments if n not in outputs]
        if problems:
            return None, ToolResult.error("invalid final answer: " + "; ".join(problems))
        try:
            values = coerce_fields(dict(arguments), {n: s.validation_annotation for n, s in outputs.items()})
        except FieldValueError as exc:
            lines = "; ".join(str(e) for e in exc.errors) or str(exc)
            return None, ToolResult.error(f"invalid final answer: {lines}")
        return values, ToolResult.success("Final answer accepted.")

    def _prediction(self, status: str, outputs: Mapping[str, object] | None) -> Prediction:
        self.trajectory.status = status
        values = dict(outputs) if outputs is not None else dict.fromkeys(self.signature.output_fields)
        last = self.last
        meta = PredictionMeta(
            raw=last.text if last is not None else None,
            usage=self.usage,
            adapter=f"Agent[{'native' if self.protocol.native else 'text'}]",
            attempts=len(self.trajectory),
            completion=last,
            messages=list(self.messages),
            model=(last.model if last is not None else None) or getattr(self.lm, "model", None),
        )
        return Prediction(values, trajectory=self.trajectory, _meta=meta)
