"""A backend that answers from a script, to run *under* a real :class:`sigform.LM`.

:class:`~sigform.testing.ScriptedLM` replaces the LM; :class:`ScriptedBackend` replaces only what
carries requests to the provider (see :mod:`sigform.lm.backend`), the way a mock transport sits
under a real HTTP client. Everything the LM does around the request still happens -- parameter
checks, the response cache, hooks, history, usage, retries, ``n`` top-ups, streaming -- and so
does what programs do around the LM (pruning, prompt-cache markers, adapters)::

    backend = ScriptedBackend(["[[ ## answer ## ]]\\nParis\\n\\n[[ ## completed ## ]]"])
    lm = sf.LM("openai/gpt-4o-mini", backend=backend)
    ...
    assert backend.requests[-1].params["temperature"] == 0.0

The script items are :class:`ScriptedLM`'s (a string, a :class:`Completion` or its fields as a
dict, an exception to raise, a callable); each request consumes one item per candidate. A
scripted :class:`~sigform.errors.LMError` is the provider's failure: ``RateLimitError`` and
``ProviderError`` are retried by the LM like real ones. Answers go back in the OpenAI
chat-completions shape (streams in ``chunk_size``-character pieces), so the LM parses them as it
parses a provider's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from sigform.lm.interface import Completion, Usage
from sigform.lm.request import Request
from sigform.testing.scripted import ScriptedLM

__all__ = ["ScriptedBackend"]

ALL_FEATURES = frozenset({"json_schema", "json_object", "tools", "stop", "reasoning", "multimodal"})


class ScriptedBackend:
    """A :class:`~sigform.lm.backend.Backend` answering from ``responses`` (see the module docs).

    ``features`` are what the LM over it reports as supported (default: none, like an unknown
    model); ``usage`` is attached to string answers; ``chunk_size`` is the length of streamed
    text pieces. :attr:`requests` records every request that reached the backend (retries
    included, cache hits not)."""

    name = "scripted"

    def __init__(
        self,
        responses: Iterable[object] | Callable[..., object],
        *,
        features: Iterable[str] = (),
        usage: Usage | None = None,
        chunk_size: int = 4,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self.script = ScriptedLM(responses, model="scripted", features=features, usage=usage, strict=False)
        self.chunk_size = chunk_size
        self.requests: list[Request] = []

    def supports(self, feature: str) -> bool:
        """What the LM over this backend answers in :meth:`sigform.LM.supports`."""
        return self.script.supports(feature)

    # -- Backend ------------------------------------------------------------------------------

    def complete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        return _body(self._answer(req)), None

    async def acomplete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        self.requests.append(req)
        return _body(await self.script.acall(req.messages, **_script_kwargs(req))), None

    def stream(self, req: Request) -> Iterator[dict[str, Any]]:
        yield from _chunks(self._answer(req), self.chunk_size)

    async def astream(self, req: Request) -> AsyncIterator[dict[str, Any]]:
        self.requests.append(req)
        completions = await self.script.acall(req.messages, **_script_kwargs(req))
        for chunk in _chunks(completions, self.chunk_size):
            yield chunk

    def _answer(self, req: Request) -> list[Completion]:
        self.requests.append(req)
        return self.script(req.messages, **_script_kwargs(req))


def _script_kwargs(req: Request) -> dict[str, object]:
    return {**req.params, "n": req.params.get("n") or 1}


def _usage(usage: Usage) -> dict[str, object]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


def _tool_calls(completion: Completion) -> list[dict[str, Any]]:
    out = []
    for i, call in enumerate(completion.tool_calls):
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        function = {"name": call.name, "arguments": arguments}
        out.append({"id": call.id or f"call_{i}", "type": "function", "function": function})
    return out


def _body(completions: list[Completion]) -> dict[str, object]:
    """The chat-completions body a provider would send for ``completions``."""
    choices = []
    for index, c in enumerate(completions):
        message: dict[str, object] = {"role": "assistant", "content": c.text}
        if c.reasoning:
            message["reasoning_content"] = c.reasoning
        if c.tool_calls:
            message["tool_calls"] = _tool_calls(c)
        choices.append({"index": index, "message": message, "finish_reason": c.finish_reason or "stop"})
    usage = completions[0].usage if completions else Usage()
    return {"object": "chat.completion", "model": "scripted", "choices": choices, "usage": _usage(usage)}


def _chunks(completions: list[Completion], size: int) -> Iterator[dict[str, object]]:
    """The stream chunks a provider would send for ``completions``."""

    def chunk(index: int, delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"model": "scripted", "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}

    for index, c in enumerate(completions):
        for key, text in (("reasoning_content", c.reasoning or ""), ("content", c.text)):
            for start in range(0, len(text), size):
                yield chunk(index, {key: text[start : start + size]})
        for t, call in enumerate(_tool_calls(c)):
            yield chunk(index, {"tool_calls": [{"index": t, **call}]})
        yield chunk(index, {}, c.finish_reason or "stop")
    usage = completions[0].usage if completions else Usage()
    yield {"model": "scripted", "choices": [], "usage": _usage(usage)}
