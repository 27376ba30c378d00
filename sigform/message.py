"""The chat message every layer passes around: OpenAI's chat format, which litellm and sigform's
own backends translate for each provider.

A :class:`Message` always has a ``role`` and a ``content`` (text, a list of content parts for
media and cache markers, or None for an assistant turn that only calls tools); the other keys
appear where the role needs them.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Message"]


class _Required(TypedDict):
    role: str  # system, user, assistant, tool (developer for some OpenAI models)
    content: str | list[dict[str, Any]] | None


class Message(_Required, total=False):
    """One chat message (see the module docstring)."""

    name: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    thinking_blocks: list[dict[str, Any]]
    reasoning_content: str
