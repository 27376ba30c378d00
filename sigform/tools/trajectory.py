"""What an agent did, step by step: thoughts, tool calls, arguments, approvals and results."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sigform.tools.approval import Decision
from sigform.tools.result import ToolResult

__all__ = ["CallRecord", "Step", "Trajectory"]


@dataclass(frozen=True)
class CallRecord:
    """One tool call: what the LM asked for, what was validated and decided, and what came back.

    ``approval`` is None when the call needed no approval (or never got that far: unknown tool,
    invalid arguments).
    """

    tool: str
    call_id: str
    arguments: Mapping[str, Any] | str
    result: ToolResult
    args: Mapping[str, Any] | None = None
    approval: Decision | None = None
    description: str | None = None

    @property
    def status(self) -> str:
        return self.result.status

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (validated args rendered with pydantic's serializer)."""
        from pydantic_core import to_jsonable_python

        return {
            "tool": self.tool,
            "call_id": self.call_id,
            "arguments": to_jsonable_python(self.arguments, fallback=repr),
            "args": None if self.args is None else to_jsonable_python(dict(self.args), fallback=repr),
            "approval": None if self.approval is None else self.approval.value,
            "result": self.result.to_dict(),
        }


@dataclass(frozen=True)
class Step:
    """One LM turn of an agent: its thought (free text) and the tool calls it made."""

    index: int
    thought: str
    calls: tuple[CallRecord, ...] = ()
    note: str | None = None  # feedback the agent gave the LM (unreadable reply, bad final answer)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = {
            "index": self.index,
            "thought": self.thought,
            "calls": [c.to_dict() for c in self.calls],
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Trajectory:
    """The ordered steps of one agent run and how it ended.

    ``status``: ``"completed"`` (final answer given), ``"max_steps"`` (step budget used up),
    ``"cancelled"`` (the approver cancelled), or ``"running"`` while the run is in progress.
    """

    steps: list[Step] = field(default_factory=list)
    status: str = "running"

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    @property
    def calls(self) -> list[CallRecord]:
        """Every tool call of every step, in order."""
        return [call for step in self.steps for call in step.calls]

    @property
    def completed(self) -> bool:
        """True when the run ended with a final answer."""
        return self.status == "completed"

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-ready steps."""
        return [step.to_dict() for step in self.steps]

    def _repr_html_(self) -> str:
        from sigform.html_view import trajectory_html

        return trajectory_html(self)

    def render(self) -> str:
        """A readable transcript (for logs and for showing a person what happened)."""
        lines: list[str] = []
        for step in self.steps:
            lines.append(f"Step {step.index}: {step.thought}".rstrip())
            for call in step.calls:
                approval = f" [{call.approval.value}]" if call.approval is not None else ""
                lines.append(f"  -> {call.tool}({_brief_args(call)}){approval}: {call.result.status}")
                lines.append(f"     {call.result.for_user[:500]}")
            if step.note:
                lines.append(f"  note: {step.note}")
        return "\n".join(lines)


def _brief_args(call: CallRecord) -> str:
    from sigform.excerpt import shorten

    if call.args is not None:
        return ", ".join(f"{k}={shorten(v, 60)}" for k, v in call.args.items())
    return shorten(call.arguments, 120)
