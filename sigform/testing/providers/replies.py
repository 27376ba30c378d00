"""The neutral script a fake provider follows: what the model "says", independent of wire format.

A :class:`Reply` is one candidate answer (text, reasoning, tool calls, finish reason, token
usage); each provider fake renders it in its own JSON and server-sent-event shapes. An
:class:`ErrorReply` makes the fake fail the way that provider fails (status, error body,
``Retry-After``). Token usage follows the OpenAI convention, the one sigform reports:
``prompt_tokens`` includes ``cached_tokens`` and ``completion_tokens`` includes
``reasoning_tokens``; each fake splits the numbers the way its provider does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sigform.lm.interface import ToolCall, Usage

__all__ = ["FINISH_REASONS", "ErrorReply", "Reply", "ToolCall", "Usage", "arguments_json", "arguments_object"]

# The neutral finish reasons (OpenAI's names); each fake maps them to its provider's names.
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")


@dataclass(frozen=True)
class Reply:
    """One scripted candidate answer.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``.
    A tool call's ``id`` of ``None`` lets the fake generate one in its provider's style (Gemini
    sends none at all). ``arguments`` given as a string are sent verbatim (to script invalid
    JSON) where the wire format carries a string. ``signature`` is the thinking signature
    (Anthropic, Gemini); one is made up when ``reasoning`` is set and it is ``None``.
    ``cache_write_tokens`` are prompt tokens written to a provider cache (Anthropic's
    ``cache_creation_input_tokens``), counted inside ``usage.prompt_tokens``. ``chunk_chars``
    is how many characters of text each streamed delta carries; ``delay`` (seconds) overrides
    the fake's latency for this reply.
    """

    text: str = ""
    reasoning: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    finish_reason: str | None = None
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=12, completion_tokens=8))
    cache_write_tokens: int = 0
    signature: str | None = None
    model: str | None = None
    chunk_chars: int = 8
    delay: float | None = None

    def __post_init__(self) -> None:
        if self.finish_reason is not None and self.finish_reason not in FINISH_REASONS:
            raise ValueError(f"finish_reason must be one of {FINISH_REASONS}, got {self.finish_reason!r}")
        if self.chunk_chars < 1:
            raise ValueError(f"chunk_chars must be >= 1, got {self.chunk_chars}")
        u = self.usage
        if u.cached_tokens + self.cache_write_tokens > u.prompt_tokens:
            raise ValueError("usage.prompt_tokens must include cached_tokens and cache_write_tokens")
        if u.reasoning_tokens > u.completion_tokens:
            raise ValueError("usage.completion_tokens must include reasoning_tokens")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    @property
    def stop(self) -> str:
        """The neutral finish reason, defaults resolved."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def thinking_signature(self) -> str:
        """The signature sent with the reasoning (made up when not scripted)."""
        if self.signature is not None:
            return self.signature
        return "sig-" + hashlib.sha256((self.reasoning or "").encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ErrorReply:
    """A scripted failure: HTTP ``status`` with the provider's error body around ``message``.

    ``retry_after`` (seconds) is sent as the ``Retry-After`` header; ``body`` replaces the
    provider-shaped error body entirely; ``headers`` are extra response headers.
    """

    status: int = 429
    message: str = "Rate limit reached, please retry later."
    retry_after: float | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float | None = None

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"an error status must be 4xx or 5xx, got {self.status}")


def arguments_json(call: ToolCall) -> str:
    """The call's arguments as the JSON string a provider puts on the wire."""
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(dict(call.arguments), separators=(",", ":"), ensure_ascii=False)


def arguments_object(call: ToolCall, provider: str) -> dict[str, Any]:
    """The call's arguments as an object, for providers whose wire format has no string form."""
    if isinstance(call.arguments, Mapping):
        return dict(call.arguments)
    try:
        value = json.loads(call.arguments)
    except ValueError as exc:
        raise ValueError(
            f"{provider} sends tool arguments as a JSON object; cannot send {call.arguments!r}"
        ) from exc
    if not isinstance(value, dict):
        raise ValueError(f"{provider} sends tool arguments as a JSON object; got {call.arguments!r}")
    return value
