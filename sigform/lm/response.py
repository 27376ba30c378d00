"""Turn an OpenAI-shaped chat-completions response (a dict) into :class:`Completion` values.

Both backends hand this module plain dicts: the openai SDK path the JSON body, the litellm path
``ModelResponse.model_dump()``. Reasoning text is read from ``reasoning_content`` (litellm,
DeepSeek, vLLM) or ``reasoning`` (some OpenAI-compatible servers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sigform.lm.interface import Completion, ToolCall, Usage

__all__ = ["decode_arguments", "finish_reason", "parse_choices", "parse_usage", "reasoning_of", "text_of"]


def decode_arguments(raw: Any) -> Mapping[str, Any] | str:
    """Tool-call arguments as a dict when they are a JSON object, else the raw string."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return "" if raw is None else str(raw)
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def text_of(content: Any) -> str:
    """Message content as text (list-of-parts content is joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, Mapping) and p.get("type") in (None, "text", "output_text"):
                parts.append(str(p.get("text") or ""))
            elif isinstance(p, str):
                parts.append(p)
        return "".join(parts)
    return str(content)


def reasoning_of(message: Mapping[str, Any]) -> str | None:
    """The reasoning text of a message or delta, if the provider sent any."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, Mapping):  # {"summary": ...} or {"text": ...}
            text = value.get("text") or value.get("summary")
            if isinstance(text, str) and text:
                return text
    blocks = message.get("thinking_blocks")
    if isinstance(blocks, list):
        joined = "".join(str(b.get("thinking") or "") for b in blocks if isinstance(b, Mapping))
        return joined or None
    return None


def parse_usage(usage: Mapping[str, Any] | None, cost: float | None = None) -> Usage:
    """A :class:`Usage` from an OpenAI-shaped ``usage`` object (missing fields count 0)."""
    if not usage:
        return Usage(cost=cost)
    completion_details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        cached_tokens=int(prompt_details.get("cached_tokens") or usage.get("cache_read_input_tokens") or 0),
        cost=cost,
    )


def finish_reason(reason: str | None, tool_calls: tuple[ToolCall, ...]) -> str | None:
    """The finish reason, with ``stop`` read as ``tool_calls`` when the model called tools (as
    litellm normalises it, so both routes agree)."""
    return "tool_calls" if tool_calls and reason == "stop" else reason


def _tool_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = message.get("tool_calls") or ()
    out = []
    for call in calls:
        fn = call.get("function") or {}
        out.append(
            ToolCall(
                name=str(fn.get("name") or ""),
                arguments=decode_arguments(fn.get("arguments")),
                id=call.get("id"),
            )
        )
    return tuple(out)


def parse_choices(
    body: Mapping[str, Any],
    *,
    model: str,
    provider: str,
    usage: Usage,
) -> list[Completion]:
    """One :class:`Completion` per choice, in choice order, each carrying the request ``usage``."""
    choices = sorted(body.get("choices") or (), key=lambda c: c.get("index") or 0)
    out = []
    for choice in choices:
        message = choice.get("message") or {}
        calls = _tool_calls(message)
        out.append(
            Completion(
                text=text_of(message.get("content")),
                reasoning=reasoning_of(message),
                tool_calls=calls,
                finish_reason=finish_reason(choice.get("finish_reason"), calls),
                logprobs=choice.get("logprobs"),
                usage=usage,
                model=body.get("model") or model,
                provider=provider,
            )
        )
    return out
