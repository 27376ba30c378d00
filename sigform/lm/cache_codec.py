"""Cached completions as data: JSON bytes in, checked :class:`Completion` values out.

The disk cache is a file anyone with access to the folder can write, so a stored value is read
as untrusted data: a versioned JSON document whose every field is type-checked, never pickle.
Anything else -- an entry from an older sigform (pickled), a truncated or edited value -- is
refused with :class:`CacheEntryError` and treated as a miss.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sigform.errors import CacheEntryError
from sigform.lm.interface import Completion, ToolCall, Usage

__all__ = ["CacheEntryError", "decode", "encode"]

_MAGIC = b"sigform-completions/1\n"
_USAGE_INTS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens")


def _usage(u: Usage) -> dict[str, object]:
    return {name: getattr(u, name) for name in (*_USAGE_INTS, "cost")}


def encode(completions: list[Completion]) -> bytes:
    """The JSON bytes of ``completions`` (ValueError/TypeError when a value is not JSON data)."""
    items = [
        {
            "text": c.text,
            "reasoning": c.reasoning,
            "tool_calls": [
                {
                    "name": t.name,
                    "arguments": t.arguments if isinstance(t.arguments, str) else dict(t.arguments),
                    "id": t.id,
                }
                for t in c.tool_calls
            ],
            "finish_reason": c.finish_reason,
            "logprobs": c.logprobs,
            "usage": _usage(c.usage),
            "model": c.model,
            "provider": c.provider,
        }
        for c in completions
    ]
    return _MAGIC + json.dumps(items, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def _text(entry: Mapping[str, object], name: str, *, optional: bool = True) -> str | None:
    value = entry.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise CacheEntryError(f"field {name!r} is not text")
    return value


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CacheEntryError(f"usage {name!r} is not a count")
    return value


def _decode_usage(raw: object) -> Usage:
    if not isinstance(raw, Mapping):
        raise CacheEntryError("usage is not an object")
    cost = raw.get("cost")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost)
    ):
        raise CacheEntryError("usage cost is not a number")
    return Usage(
        prompt_tokens=_count(raw.get("prompt_tokens", 0), "prompt_tokens"),
        completion_tokens=_count(raw.get("completion_tokens", 0), "completion_tokens"),
        reasoning_tokens=_count(raw.get("reasoning_tokens", 0), "reasoning_tokens"),
        cached_tokens=_count(raw.get("cached_tokens", 0), "cached_tokens"),
        cost=None if cost is None else float(cost),
    )


def _decode_tool_call(raw: object) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise CacheEntryError("tool call is not an object")
    args = raw.get("arguments")
    if not isinstance(args, (str, dict)):
        raise CacheEntryError("tool call arguments are neither text nor an object")
    return ToolCall(name=_text(raw, "name", optional=False) or "", arguments=args, id=_text(raw, "id"))


def _decode_one(raw: object) -> Completion:
    if not isinstance(raw, Mapping):
        raise CacheEntryError("completion is not an object")
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list):
        raise CacheEntryError("tool_calls is not a list")
    return Completion(
        text=_text(raw, "text", optional=False) or "",
        reasoning=_text(raw, "reasoning"),
        tool_calls=tuple(_decode_tool_call(c) for c in calls),
        finish_reason=_text(raw, "finish_reason"),
        logprobs=raw.get("logprobs"),
        usage=_decode_usage(raw.get("usage", {})),
        model=_text(raw, "model"),
        provider=_text(raw, "provider"),
    )


def _rebuild(raw: dict[str, Any]) -> Completion:
    """A completion from an entry this process encoded itself (no checks needed)."""
    usage = raw["usage"]
    return Completion(
        text=raw["text"],
        reasoning=raw["reasoning"],
        tool_calls=tuple(ToolCall(t["name"], t["arguments"], t["id"]) for t in raw["tool_calls"]),
        finish_reason=raw["finish_reason"],
        logprobs=raw["logprobs"],
        usage=Usage(**usage),
        model=raw["model"],
        provider=raw["provider"],
    )


def decode(blob: object, *, trusted: bool = False) -> list[Completion]:
    """The completions stored in ``blob``, or :class:`CacheEntryError`. ``trusted``: the blob
    was encoded by this process (the memory layer), so its fields are not checked again."""
    if isinstance(blob, memoryview):
        blob = bytes(blob)
    if not isinstance(blob, bytes) or not blob.startswith(_MAGIC):
        raise CacheEntryError("not a sigform cache entry (an older pickled entry, or foreign data)")
    try:
        items = json.loads(blob[len(_MAGIC) :])
    except (ValueError, RecursionError) as exc:
        raise CacheEntryError(f"entry is not valid JSON ({type(exc).__name__})") from None
    if trusted:
        return [_rebuild(item) for item in items]
    if not isinstance(items, list) or not items:
        raise CacheEntryError("entry is not a non-empty list of completions")
    return [_decode_one(item) for item in items]
