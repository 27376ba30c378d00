"""The small contract between programs/adapters and whatever answers them.

Adapters and programs talk to a language model only through :class:`LMProtocol`: a callable
that takes chat messages plus request keyword arguments and returns a list of
:class:`Completion` (one per candidate, ``n`` of them). The litellm-backed :class:`sigform.LM`,
the embedded local model and :class:`sigform.testing.ScriptedLM` all implement it. This module
imports nothing heavy, so adapters can depend on it without pulling in litellm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sigform.message import Message


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for. ``arguments`` is the decoded JSON object when the
    provider sent valid JSON, else the raw string (so that validation can report it)."""

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None


@dataclass(frozen=True)
class Usage:
    """Token accounting for one request (all candidates together)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    cache_hit: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost=cost,
            cache_hit=self.cache_hit and other.cache_hit,
        )


# the zero a sum starts from: one, shared (frozen, so safe to share; each Usage() costs ~2 us)
NO_USAGE = Usage()


@dataclass(frozen=True)
class Completion:
    """One candidate answer from a model, normalised across providers."""

    text: str
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    logprobs: Any = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    provider: str | None = None

    @property
    def truncated(self) -> bool:
        """True when the model stopped because it hit the output-token limit."""
        return self.finish_reason == "length"


@runtime_checkable
class LMProtocol(Protocol):
    """What adapters and programs need from a language model.

    ``supports(feature)`` answers capability questions adapters ask before building a request:
    ``"json_schema"`` (strict structured outputs), ``"json_object"``, ``"tools"`` (native function
    calling), ``"reasoning"`` (native reasoning content), ``"stop"`` (stop sequences),
    ``"multimodal"``. Unknown features answer False.
    """

    model: str

    def __call__(self, messages: list[Message], **kwargs: Any) -> list[Completion]: ...

    async def acall(self, messages: list[Message], **kwargs: Any) -> list[Completion]: ...

    def supports(self, feature: str) -> bool: ...
