"""Human-in-the-loop approval of tool calls.

An *approver* is any callable ``(request: ApprovalRequest) -> Decision`` (sync or async). It may
also answer ``True``/``False`` or the strings ``"approve"``, ``"reject"``, ``"cancel"``:

* approve -- the call runs;
* reject  -- this call does not run; the LM is told the user declined it and the loop continues;
* cancel  -- no further tool runs in this turn; the LM is told and the agent run ends.

Ready-made approvers: :func:`auto_approve` and :func:`auto_reject` (tests, trusted setups),
:class:`ScriptedApprover` (a list of answers, for tests) and :class:`TerminalApprover` (asks in the
terminal with rich).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from sigform.errors import ToolError
from sigform.tools.display import escape_controls

if TYPE_CHECKING:
    from rich.console import Console

    from sigform.tools.tool import Tool

__all__ = [
    "ApprovalRequest",
    "Approver",
    "Decision",
    "ScriptedApprover",
    "TerminalApprover",
    "auto_approve",
    "auto_cancel",
    "auto_reject",
    "to_decision",
]


class Decision(str, enum.Enum):
    """An approver's answer for one tool call."""

    APPROVE = "approve"
    REJECT = "reject"
    CANCEL = "cancel"


@dataclass(frozen=True)
class ApprovalRequest:
    """One call waiting for a decision: the tool, its validated arguments and a readable text."""

    tool: Tool
    args: Mapping[str, Any]
    description: str
    call_id: str | None = None
    step: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tool_name(self) -> str:
        return self.tool.name


Approver = Callable[[ApprovalRequest], Any]


def to_decision(answer: object) -> Decision:
    """Normalise an approver's answer; anything unrecognised is an error, never a silent approve."""
    if isinstance(answer, Decision):
        return answer
    if isinstance(answer, bool):
        return Decision.APPROVE if answer else Decision.REJECT
    if isinstance(answer, str):
        key = answer.strip().lower()
        aliases = {"y": "approve", "yes": "approve", "n": "reject", "no": "reject", "c": "cancel"}
        try:
            return Decision(aliases.get(key, key))
        except ValueError:
            pass
    raise ToolError(
        f"an approver answered {answer!r}; expected Decision.APPROVE/REJECT/CANCEL, True/False, "
        "or 'approve'/'reject'/'cancel'"
    )


def auto_approve(request: ApprovalRequest) -> Decision:
    """Approve every call (tests, sandboxes, trusted tools)."""
    return Decision.APPROVE


def auto_reject(request: ApprovalRequest) -> Decision:
    """Reject every call that needs approval."""
    return Decision.REJECT


def auto_cancel(request: ApprovalRequest) -> Decision:
    """Cancel at the first call that needs approval."""
    return Decision.CANCEL


class ScriptedApprover:
    """Answers from a list, in order, and records every request it saw (for tests).

    ``ScriptedApprover(["approve", "reject"])``; running out of answers is an error.
    """

    def __init__(self, answers: Iterable[object]) -> None:
        self.answers = [to_decision(a) for a in answers]
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        if len(self.requests) >= len(self.answers):
            raise ToolError(
                f"ScriptedApprover has no answer left for call #{len(self.requests) + 1} "
                f"({request.description!r}); it was given {len(self.answers)}"
            )
        self.requests.append(request)
        return self.answers[len(self.requests) - 1]


class TerminalApprover:
    """Asks in the terminal: shows the call in a rich panel, then ``[y]es / [n]o / [c]ancel``.

    ``console`` and ``stream`` default to the terminal; pass a ``rich.console.Console`` and a text
    stream to redirect (as the tests do). End of input counts as cancel.
    """

    def __init__(self, console: Console | None = None, *, stream: IO[str] | None = None) -> None:
        self.console = console
        self.stream = stream

    # rich markup: "\[n]" is the literal default hint (a bare "[n]" was read as a tag and vanished)
    question = (
        "Run it? [bold]y[/]es / [bold]n[/]o (tell the model) / [bold]c[/]ancel (stop the agent) \\[n]: "
    )
    _ANSWERS: Mapping[str, Decision] = {
        "y": Decision.APPROVE,
        "yes": Decision.APPROVE,
        "n": Decision.REJECT,
        "no": Decision.REJECT,
        "": Decision.REJECT,
        "c": Decision.CANCEL,
        "cancel": Decision.CANCEL,
    }

    def __call__(self, request: ApprovalRequest) -> Decision:
        from rich.console import Console
        from rich.panel import Panel
        from rich.text import Text

        console = self.console or Console()
        # model-chosen text must not drive the terminal (ESC[1A, ESC[2K, CR, bidi overrides could
        # repaint what the person approves); describe_call escapes too, this covers hand-made requests
        description = Text(escape_controls(request.description, keep="\n"))
        title = Text(f"tool call: {escape_controls(request.tool_name)}")
        console.print(Panel(description, title=title, expand=False))
        while True:
            try:
                if self.stream is not None:
                    console.print(self.question, end="")
                    line = self.stream.readline()
                    if not line:  # end of input: nobody can answer, so stop rather than guess
                        return Decision.CANCEL
                else:
                    line = console.input(self.question)
            except (EOFError, KeyboardInterrupt):
                return Decision.CANCEL
            decision = self._ANSWERS.get(line.strip().lower())
            if decision is not None:
                return decision
            console.print("[red]Please answer y, n or c.[/]")
