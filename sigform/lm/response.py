"""Turn an OpenAI-shaped chat-completions response (a dict) into :class:`Completion` values.

A text-completions response (``/completions``: each choice's ``text`` instead of a ``message``)
is read the same way.

Both backends hand this module plain dicts: the fast path the JSON body, the litellm path
``ModelResponse.model_dump()``. Reasoning text is read from ``reasoning_content`` (litellm,
DeepSeek, vLLM) or ``reasoning`` (some OpenAI-compatible servers).

A body that is not a chat completion (an HTML error page with status 200, ``[]``, a choice that
is not an object, ``"prompt_tokens": "many"``) raises :class:`MalformedResponseError`, which the
caller maps to a retryable :class:`~sigform.errors.ProviderError`, like a 5xx.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sigform import jsonvalue
from sigform.errors import MalformedResponseError
from sigform.lm.interface import Completion, ToolCall, Usage

__all__ = [
    "MalformedResponseError",
    "chunk_not_json",
    "chunk_unreadable",
    "decode_arguments",
    "finish_reason",
    "parse_body",
    "parse_choices",
    "parse_usage",
    "reasoning_of",
    "text_of",
]

_OBJECT = (dict, Mapping)  # a JSON object: a dict, tested first (no ABC machinery on the common case)


def parse_body(content: bytes | str) -> dict[str, Any]:
    """A response body as a JSON object, or :class:`MalformedResponseError` (never a raw
    ``JSONDecodeError``) naming what came instead."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        head = content[:60] if content else "an empty body"
        raw = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        raise MalformedResponseError(f"the response is not JSON (starts with {head!r})", raw) from None
    if not isinstance(body, dict):
        raise MalformedResponseError(f"the response is a JSON {type(body).__name__}, not an object")
    return body


def chunk_not_json(exc: json.JSONDecodeError) -> MalformedResponseError:
    """The error for a streamed event whose data is not JSON (the SDK's decode error keeps it)."""
    raw = exc.doc if isinstance(exc.doc, str) else str(exc.doc)
    return MalformedResponseError(f"a streamed chunk is not JSON (starts with {raw[:60]!r})", raw)


def chunk_unreadable(cause: BaseException) -> MalformedResponseError:
    """The error for a streamed chunk that litellm parsed but could not read (``cause`` is its
    ``AttributeError``, ``TypeError`` ... or pydantic ``ValidationError``).

    litellm keeps neither the chunk's text nor the chunk (the openai SDK drops the event text once
    parsed; litellm's exceptions carry only a message). What the exception itself carries is
    kept as the raw text: the value an attribute was looked up on (``AttributeError.obj``) or the
    input a validation failed on, as JSON.
    """
    what = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
    value = _failed_value(cause)
    kept = "" if value is None else f", only the value it failed on: {value[:80]}"
    return MalformedResponseError(
        f"a streamed chunk is not a chat-completion chunk (litellm could not read it: {what}; "
        f"litellm does not keep the chunk's text{kept})",
        value,
    )


def _failed_value(cause: BaseException) -> str | None:
    """The provider's value an exception names, as JSON; ``None`` when it names none."""
    value: Any = None
    if isinstance(cause, AttributeError):
        value = cause.obj  # None when the error was not raised by an attribute lookup
    elif callable(getattr(cause, "errors", None)):  # pydantic's ValidationError
        try:
            errors = cause.errors()  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            errors = []
        value = errors[0].get("input") if errors and isinstance(errors[0], Mapping) else None
    if value is None:
        return None
    if callable(getattr(value, "model_dump", None)):  # a chunk model the SDK built without checking
        try:
            value = value.model_dump(mode="json", warnings=False)
        except (TypeError, ValueError):
            return None
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def _count(name: str, value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)  # a count sent as a string of digits is still that count
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise MalformedResponseError(f"usage {name} is {value!r}, not a token count")
    return int(value)


def decode_arguments(raw: object) -> Mapping[str, Any] | str:
    """Tool-call arguments as a dict when they are a JSON object, else the raw string."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return "" if raw is None else str(raw)
    try:
        value = jsonvalue.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def text_of(content: object) -> str:
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


def reasoning_of(message: Mapping[str, object]) -> str | None:
    """The reasoning text of a message or delta, if the provider sent any."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if not value:
            continue
        if isinstance(value, str):
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


def parse_usage(usage: Mapping[str, object] | None, cost: float | None = None) -> Usage:
    """A :class:`Usage` from an OpenAI-shaped ``usage`` object (missing fields count 0)."""
    if not usage:
        return Usage(cost=cost)
    if not isinstance(usage, _OBJECT):
        raise MalformedResponseError(f"usage is a {type(usage).__name__}, not an object")
    completion_details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    if not isinstance(completion_details, _OBJECT) or not isinstance(prompt_details, _OBJECT):
        raise MalformedResponseError("usage token details are not objects")
    cached = prompt_details.get("cached_tokens") or usage.get("cache_read_input_tokens")
    return Usage(
        prompt_tokens=_count("prompt_tokens", usage.get("prompt_tokens")),
        completion_tokens=_count("completion_tokens", usage.get("completion_tokens")),
        reasoning_tokens=_count("reasoning_tokens", completion_details.get("reasoning_tokens")),
        cached_tokens=_count("cached_tokens", cached),
        cost=cost,
    )


def finish_reason(reason: str | None, tool_calls: tuple[ToolCall, ...]) -> str | None:
    """The finish reason, with ``stop`` read as ``tool_calls`` when the model called tools (as
    litellm normalises it, so both routes agree)."""
    return "tool_calls" if tool_calls and reason == "stop" else reason


def _tool_calls(message: Mapping[str, object]) -> tuple[ToolCall, ...]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, (list, tuple)):
        raise MalformedResponseError("tool_calls is not a list")
    out = []
    for call in calls:
        fn = call.get("function") or {} if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise MalformedResponseError(f"a tool call is not an object: {str(call)[:60]!r}")
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
    """One :class:`Completion` per choice, in choice order, each carrying the request ``usage``
    (:class:`MalformedResponseError` for a body that is not a chat completion)."""
    if not isinstance(body, _OBJECT):
        raise MalformedResponseError(f"the response is a {type(body).__name__}, not an object")
    choices = body.get("choices") or []
    if not isinstance(choices, list) or not all(isinstance(c, _OBJECT) for c in choices):
        raise MalformedResponseError(f"choices is not a list of objects: {str(choices)[:60]!r}")
    if not all(isinstance(c.get("index") or 0, int) for c in choices):
        raise MalformedResponseError("a choice index is not a number")
    if len(choices) > 1:
        choices = sorted(choices, key=lambda c: c.get("index") or 0)
    out = []
    for choice in choices:
        message = choice.get("message") or {}
        if not isinstance(message, _OBJECT):
            raise MalformedResponseError(f"a choice's message is not an object: {str(message)[:60]!r}")
        calls = _tool_calls(message)
        # a text completion (``/completions``) answers with the choice's ``text``
        content = message.get("content") if "text" not in choice else choice["text"]
        if not isinstance(content, str) and isinstance(content, Mapping):  # never read as its repr
            where = "text" if "text" in choice else "message content"
            shown = str(content)[:60]
            raise MalformedResponseError(f"a choice's {where} is a JSON object, not a string: {shown!r}")
        out.append(
            Completion(
                text=text_of(content),
                reasoning=reasoning_of(message),
                tool_calls=calls,
                finish_reason=finish_reason(choice.get("finish_reason"), calls),
                logprobs=choice.get("logprobs"),
                usage=usage,
                model=body["model"] if isinstance(body.get("model"), str) and body["model"] else model,
                provider=provider,
            )
        )
    return out
