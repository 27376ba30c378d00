"""Streaming: OpenAI-shaped chunk dicts in, small :class:`StreamDelta` values out.

``lm.stream(...)`` / ``lm.astream(...)`` yield one :class:`StreamDelta` per piece of text,
reasoning or tool-call arguments as it arrives, and finally the complete ``list[Completion]``
(the same value ``lm(...)`` would have returned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sigform.lm.interface import Completion, ToolCall, Usage
from sigform.lm.response import (
    MalformedResponseError,
    decode_arguments,
    finish_reason,
    parse_usage,
    reasoning_of,
    text_of,
)


@dataclass(frozen=True)
class StreamDelta:
    """One streamed piece. ``kind`` is ``"text"``, ``"reasoning"`` or ``"tool_call"``; ``index``
    the candidate it belongs to. Tool-call deltas carry ``tool_index`` and, on their first piece,
    ``tool_id`` and ``tool_name``; ``text`` then holds a fragment of the JSON arguments."""

    kind: Literal["text", "reasoning", "tool_call"]
    text: str
    index: int = 0
    tool_index: int | None = None
    tool_id: str | None = None
    tool_name: str | None = None


@dataclass
class _ToolBuffer:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Candidate:
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tools: dict[int, _ToolBuffer] = field(default_factory=dict)
    finish_reason: str | None = None
    logprobs: list[Any] = field(default_factory=list)


class StreamAccumulator:
    """Feed chunk dicts with :meth:`feed`; read the final completions with :meth:`completions`."""

    def __init__(self, *, model: str, provider: str) -> None:
        self.model = model
        self.provider = provider
        self._candidates: dict[int, _Candidate] = {}
        self._usage: Mapping[str, Any] | None = None
        self._reported_model: str | None = None

    def feed(self, chunk: Mapping[str, Any]) -> list[StreamDelta]:
        """Absorb one chunk; return the deltas it carried. A chunk that is not a chat-completion
        chunk raises :class:`MalformedResponseError` (a retryable ``ProviderError`` once mapped)
        naming what was seen and keeping the chunk as ``raw``."""
        check_chunk(chunk)
        out: list[StreamDelta] = []
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        self._reported_model = chunk.get("model") or self._reported_model
        for choice in chunk.get("choices") or ():
            idx = choice.get("index") or 0
            cand = self._candidates.setdefault(idx, _Candidate())
            delta = choice.get("delta") or {}
            reasoning = reasoning_of(delta)
            if reasoning:
                cand.reasoning.append(reasoning)
                out.append(StreamDelta("reasoning", reasoning, idx))
            # a text-completion chunk carries its piece as the choice's ``text``
            text = text_of(delta.get("content") if "text" not in choice else choice["text"])
            if text:
                cand.text.append(text)
                out.append(StreamDelta("text", text, idx))
            for pos, call in enumerate(delta.get("tool_calls") or ()):
                t_idx = call.get("index")
                t_idx = pos if t_idx is None else t_idx
                buf = cand.tools.setdefault(t_idx, _ToolBuffer())
                fn = call.get("function") or {}
                first = buf.id is None and not buf.name
                if call.get("id"):
                    buf.id = call["id"]
                if fn.get("name"):
                    buf.name += fn["name"]
                args = fn.get("arguments") or ""
                if args:
                    buf.arguments.append(args)
                if args or first:
                    out.append(StreamDelta("tool_call", args, idx, t_idx, call.get("id"), fn.get("name")))
            if choice.get("finish_reason"):
                cand.finish_reason = choice["finish_reason"]
            logprobs = choice.get("logprobs")
            if logprobs and isinstance(logprobs, Mapping) and logprobs.get("content"):
                cand.logprobs.extend(logprobs["content"])
        return out

    def usage(self, cost: float | None = None) -> Usage:
        return parse_usage(self._usage, cost)

    def completions(self, cost: float | None = None) -> list[Completion]:
        """The assembled candidates, in index order."""
        usage = self.usage(cost)
        out = []
        for idx in sorted(self._candidates):
            cand = self._candidates[idx]
            calls = tuple(
                ToolCall(name=b.name, arguments=decode_arguments("".join(b.arguments)), id=b.id)
                for _, b in sorted(cand.tools.items())
            )
            out.append(
                Completion(
                    text="".join(cand.text),
                    reasoning="".join(cand.reasoning) or None,
                    tool_calls=calls,
                    finish_reason=finish_reason(cand.finish_reason, calls),
                    logprobs={"content": cand.logprobs} if cand.logprobs else None,
                    usage=usage,
                    model=self._reported_model or self.model,
                    provider=self.provider,
                )
            )
        return out


def _raw(chunk: object) -> str:
    import json

    try:
        return json.dumps(chunk, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a dict keyed by non-strings, say
        return repr(chunk)


_JSON_KINDS: dict[type, str] = {dict: "object", list: "list", str: "string"}


def _kind(value: object) -> str:
    return "a JSON " + _JSON_KINDS.get(type(value), type(value).__name__)


def check_chunk(chunk: object) -> None:
    """Raise :class:`MalformedResponseError` unless ``chunk`` has the shape of a chat-completion
    chunk: an object whose ``choices`` (if any) are objects with a numeric ``index``, an object
    ``delta`` whose ``tool_calls`` are objects with an object ``function``, and a readable ``usage``."""
    problem = _chunk_problem(chunk)
    if problem is not None:
        raw = _raw(chunk)
        head = raw if len(raw) <= 120 else raw[:117] + "..."
        what = f"a streamed chunk is not a chat-completion chunk ({problem}): {head}"
        raise MalformedResponseError(what, raw)


def _chunk_problem(chunk: object) -> str | None:
    if not isinstance(chunk, Mapping):
        return f"it is {_kind(chunk)}, not an object"
    choices = chunk.get("choices")
    if choices is not None and not isinstance(choices, list):
        return f"choices is {_kind(choices)}, not a list"
    for choice in choices or ():
        if not isinstance(choice, Mapping):
            return f"a choice is {_kind(choice)}, not an object"
        index = choice.get("index")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
            return f"a choice index is {index!r}, not a number"
        delta = choice.get("delta")
        if delta is not None and not isinstance(delta, Mapping):
            return f"a delta is {_kind(delta)}, not an object"
        calls = (delta or {}).get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            return f"tool_calls is {_kind(calls)}, not a list"
        for call in calls or ():
            if not isinstance(call, Mapping) or not isinstance(call.get("function") or {}, Mapping):
                return "a tool call is not an object with a function object"
            t_index = call.get("index")
            if t_index is not None and (isinstance(t_index, bool) or not isinstance(t_index, int)):
                return f"a tool call index is {t_index!r}, not a number"
    if chunk.get("usage"):
        try:
            parse_usage(chunk["usage"])
        except MalformedResponseError as exc:
            return str(exc)
    return None
