"""Tool events for :class:`sigform.hooks.Callback` subscribers (``on_tool``).

Every call reports its progress as ``tool`` events whose ``event.status`` is one of
:data:`TOOL_EVENT_STATUSES`. Payload fields: ``status``, ``tool`` (name), ``call_id``, ``step``
(the agent step, 1-based; 0 outside an agent), ``arguments`` (as the LM sent them), ``args``
(validated, or None), ``description`` (approval text, when asked), ``result``
(:class:`~sigform.tools.result.ToolResult`, for finished calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from sigform.hooks import Callback, emit

if TYPE_CHECKING:
    from sigform.tools.result import ToolResult

__all__ = ["TOOL_EVENT_STATUSES", "ToolEventStatus", "emit_tool_event"]

ToolEventStatus = Literal["started", "awaiting_approval", "succeeded", "failed", "rejected", "cancelled"]
TOOL_EVENT_STATUSES: tuple[str, ...] = (
    "started",
    "awaiting_approval",
    "succeeded",
    "failed",
    "rejected",
    "cancelled",
)


def emit_tool_event(
    status: ToolEventStatus,
    *,
    tool: str,
    call_id: str | None,
    step: int,
    arguments: object,
    args: dict[str, Any] | None = None,
    description: str | None = None,
    result: ToolResult | None = None,
    callbacks: Sequence[Callback] | None = None,
) -> None:
    """Send one ``tool`` event to the active callbacks (cheap when nobody listens)."""
    emit(
        "tool",
        callbacks=callbacks,
        status=status,
        tool=tool,
        call_id=call_id,
        step=step,
        arguments=arguments,
        args=args,
        description=description,
        result=result,
    )
