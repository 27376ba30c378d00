"""What one tool call produced: success with a value, or an error with a message.

A tool function may return any value (it becomes a success) or a :class:`ToolResult` built with
:meth:`ToolResult.success` / :meth:`ToolResult.error` when it wants to report a failure without
raising, or to show the user something different from what the LM reads. The agent loop also
uses ``rejected`` and ``cancelled`` results for calls the human did not let run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from sigform.probes import probe

__all__ = ["ResultStatus", "ToolResult", "as_result", "render_for_llm"]

ResultStatus = Literal["success", "error", "rejected", "cancelled"]
_STATUSES = ("success", "error", "rejected", "cancelled")


def render_for_llm(value: object) -> str:
    """Text the LM reads for a tool's return value: strings as is, everything else as JSON.

    pydantic's serializer handles models, dataclasses, dates, enums and sets; a value it cannot
    serialise falls back to ``repr`` rather than failing the call after the tool already ran.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    from pydantic_core import to_jsonable_python

    as_json = probe("a tool result as JSON", lambda: _json_text(to_jsonable_python(value)), "")
    return as_json or repr(value)


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call.

    ``status`` is ``"success"`` (``value`` holds what the tool returned), ``"error"`` (``message``
    says what went wrong), ``"rejected"`` (the user declined the call) or ``"cancelled"`` (the user
    stopped all tool runs). ``for_llm`` is the text sent back to the model and ``for_user`` the
    text shown to a person (defaults to ``for_llm``). ``images`` (:class:`sigform.Image` values)
    go to the model with the text, as image parts.
    """

    status: ResultStatus
    value: Any = None
    message: str | None = None
    llm_text: str | None = field(default=None, repr=False)
    user_text: str | None = field(default=None, repr=False)
    images: tuple[Any, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"ToolResult status must be one of {_STATUSES}, got {self.status!r}")
        if self.status != "success" and not self.message:
            raise ValueError(f"a {self.status} ToolResult needs a message saying why")

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def success(
        cls,
        value: object = None,
        *,
        for_llm: str | None = None,
        for_user: str | None = None,
        images: tuple[object, ...] = (),
    ) -> ToolResult:
        """A successful call returning ``value`` (rendered for the LM unless ``for_llm`` is given)."""
        return cls("success", value=value, llm_text=for_llm, user_text=for_user, images=tuple(images))

    @classmethod
    def error(
        cls,
        message: str,
        *,
        for_llm: str | None = None,
        for_user: str | None = None,
        images: tuple[object, ...] = (),
    ) -> ToolResult:
        """A failed call; ``message`` is what the LM is told (unless ``for_llm`` overrides it)."""
        return cls("error", message=str(message), llm_text=for_llm, user_text=for_user, images=tuple(images))

    @classmethod
    def rejected(cls, message: str = "The user declined this tool call; it did not run.") -> ToolResult:
        """The human declined the call, so it never ran."""
        return cls("rejected", message=message)

    @classmethod
    def cancelled(
        cls, message: str = "The user cancelled all tool calls; this call did not run."
    ) -> ToolResult:
        """The human stopped every remaining tool run of this turn."""
        return cls("cancelled", message=message)

    # -- reading -----------------------------------------------------------------------------
    @property
    def ok(self) -> bool:
        """True for a success."""
        return self.status == "success"

    @property
    def for_llm(self) -> str:
        """The text the LM reads for this result."""
        if self.llm_text is not None:
            return self.llm_text
        if self.status == "success":
            return render_for_llm(self.value)
        if self.status == "error":
            return f"Error: {self.message}"
        return str(self.message)

    @property
    def for_user(self) -> str:
        """The text a person sees for this result (``for_llm`` unless the tool gave its own)."""
        return self.user_text if self.user_text is not None else self.for_llm

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the value rendered as the LM saw it)."""
        out: dict[str, object] = {"status": self.status, "for_llm": self.for_llm}
        if self.message is not None:
            out["message"] = self.message
        if self.user_text is not None:
            out["for_user"] = self.user_text
        return out


def as_result(value: object) -> ToolResult:
    """Wrap what a tool returned: a :class:`ToolResult` passes through, anything else is a success."""
    return value if isinstance(value, ToolResult) else ToolResult.success(value)


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
