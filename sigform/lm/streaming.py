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
from sigform.lm.response import decode_arguments, finish_reason, parse_usage, reasoning_of, text_of

__all__ = ["StreamAccumulator", "StreamDelta"]


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
        """Absorb one chunk; return the deltas it carried."""
        out: list[StreamDelta] = []
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        self._reported_model = chunk.get("model") or self._reported_model
        for choice in chunk.get("choices") or ():
            idx = int(choice.get("index") or 0)
            cand = self._candidates.setdefault(idx, _Candidate())
            delta = choice.get("delta") or {}
            reasoning = reasoning_of(delta)
            if reasoning:
                cand.reasoning.append(reasoning)
                out.append(StreamDelta("reasoning", reasoning, idx))
            text = text_of(delta.get("content"))
            if text:
                cand.text.append(text)
                out.append(StreamDelta("text", text, idx))
            for pos, call in enumerate(delta.get("tool_calls") or ()):
                t_idx = call.get("index")
                t_idx = pos if t_idx is None else int(t_idx)
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
