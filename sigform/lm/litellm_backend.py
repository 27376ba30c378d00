"""The route to every provider: litellm's ``completion`` / ``acompletion`` (``text_completion`` /
``atext_completion`` for a text-completion request, one with a ``prompt``).

litellm is imported on the first call, never by ``import sigform``; its model cost map is read
from the copy shipped with it (``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before the import),
so a first call makes no network request of its own. litellm's retries are off (sigform owns the
retry policy) and so is its debug chatter.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from sigform.lm.request import Request
from sigform.probes import probe
from sigform.provider.litellm_import import import_litellm

# OpenAI-compatible providers whose self-hosted servers need no key (same rule as the fast path)
_KEYLESS_OK = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "local"})
_PLACEHOLDER_KEY = "sk-no-key-required"


def provider_of(model: str, api_base: str | None = None) -> str:
    """litellm's provider name for ``model`` (``openai``, ``anthropic``, ...); ``"unknown"`` if none."""
    litellm = import_litellm()
    return probe(
        f"litellm provider of {model!r}",
        lambda: str(litellm.get_llm_provider(model=model, api_base=api_base)[1]),
        "unknown",
    )


def supported_params(model: str, provider: str) -> frozenset[str] | None:
    """The OpenAI-style parameters litellm knows ``model`` accepts (None when it does not know)."""
    litellm = import_litellm()
    names = probe(
        f"litellm parameters of {model!r}",
        lambda: litellm.get_supported_openai_params(
            model=_bare(model, provider), custom_llm_provider=provider
        ),
        None,
    )
    return frozenset(names) if names else None


def capability(feature: str, model: str, provider: str) -> bool:
    """Answer an adapter capability question from litellm's model map (False when unknown)."""
    litellm = import_litellm()
    bare = _bare(model, provider)
    checks = {
        "json_schema": lambda: litellm.supports_response_schema(model=bare, custom_llm_provider=provider),
        "tools": lambda: litellm.supports_function_calling(model=bare, custom_llm_provider=provider),
        "reasoning": lambda: litellm.supports_reasoning(model=bare, custom_llm_provider=provider),
        "multimodal": lambda: litellm.supports_vision(model=bare, custom_llm_provider=provider),
    }
    if feature in checks:
        return probe(f"litellm: does {model!r} support {feature}", lambda: bool(checks[feature]()), False)
    if feature in ("json_object", "stop"):
        params = supported_params(model, provider) or frozenset()
        return ("response_format" if feature == "json_object" else "stop") in params
    return False


def is_openai_reasoning(model: str, provider: str) -> bool:
    """OpenAI-family reasoning models (o-series, gpt-5) that accept only temperature=1."""
    if provider not in ("openai", "azure"):
        return False
    litellm = import_litellm()
    return probe(
        f"litellm: is {model!r} a reasoning model",
        lambda: bool(litellm.supports_reasoning(model=_bare(model, provider), custom_llm_provider=provider)),
        False,
    )


def _bare(model: str, provider: str) -> str:
    prefix, sep, rest = model.partition("/")
    return rest if sep and prefix == provider else model


class LiteLLMBackend:
    """Sends :class:`Request` objects through litellm."""

    name = "litellm"

    @staticmethod
    def _kwargs(req: Request) -> dict[str, Any]:
        if req.prompt is not None:  # a text completion (litellm.text_completion)
            kw: dict[str, Any] = {"model": req.model, "prompt": req.prompt, **req.params}
        else:
            kw = {"model": req.model, "messages": req.messages, **req.params}
        if req.api_key is not None:
            kw["api_key"] = req.api_key.get()
        elif req.api_base and req.provider in _KEYLESS_OK and not os.environ.get("OPENAI_API_KEY"):
            kw["api_key"] = _PLACEHOLDER_KEY  # as on the fast path: local servers ignore the key
        if req.api_base:
            kw["api_base"] = req.api_base
        for name, cred in req.connection.items():
            kw[name] = cred.get()
        if req.headers:
            kw["extra_headers"] = {**kw.get("extra_headers", {}), **req.headers}
        if req.timeout is not None:
            kw["timeout"] = req.timeout
        kw["num_retries"] = 0
        kw["max_retries"] = 0
        return kw

    @staticmethod
    def _result(response: Any) -> tuple[dict[str, Any], float | None]:
        # by litellm's public cost function (the cost it keeps on the response is a private field)
        cost = probe(
            "litellm cost of a response",
            lambda: import_litellm().completion_cost(completion_response=response),
            None,
        )
        return response.model_dump(), (float(cost) if cost is not None else None)

    @staticmethod
    def _send(req: Request, *, is_async: bool) -> Any:
        """litellm's function for ``req``: (a)completion, or (a)text_completion for a prompt."""
        litellm = import_litellm()
        if req.prompt is not None:
            return litellm.atext_completion if is_async else litellm.text_completion
        return litellm.acompletion if is_async else litellm.completion

    def complete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        return self._result(self._send(req, is_async=False)(**self._kwargs(req)))

    async def acomplete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        return self._result(await self._send(req, is_async=True)(**self._kwargs(req)))

    def stream(self, req: Request) -> Iterator[dict[str, Any]]:
        kw = self._kwargs(req)
        kw["stream"] = True
        kw.setdefault("stream_options", {"include_usage": True})
        for chunk in self._send(req, is_async=False)(**kw):
            yield chunk.model_dump()

    async def astream(self, req: Request) -> AsyncIterator[dict[str, Any]]:
        kw = self._kwargs(req)
        kw["stream"] = True
        kw.setdefault("stream_options", {"include_usage": True})
        async for chunk in await self._send(req, is_async=True)(**kw):
            yield chunk.model_dump()


_backend: LiteLLMBackend | None = None


def get_backend() -> LiteLLMBackend:
    global _backend
    if _backend is None:
        _backend = LiteLLMBackend()
    return _backend
