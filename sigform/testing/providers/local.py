"""An OpenAI-compatible local server (llama.cpp ``llama-server``, vLLM, Ollama, DeepSeek's API).

Same Chat Completions shapes as OpenAI, plus what these servers add: reasoning text in
``message.reasoning_content`` (streamed as ``delta.reasoning_content`` before the answer),
DeepSeek's cache counters ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` next to
``prompt_tokens_details.cached_tokens``, and the ``GET /v1/models`` and ``GET /health``
endpoints local servers answer (without using the script).
"""

from __future__ import annotations

from typing import Any, ClassVar

from sigform.testing.providers.openai_chat import OpenAIChatFake
from sigform.testing.providers.replies import Reply
from sigform.testing.providers.server import RecordedRequest, Response

__all__ = ["LocalServerFake"]


class LocalServerFake(OpenAIChatFake):
    """Answers like an OpenAI-compatible local server (litellm ``openai/<model>`` at ``api_base``)."""

    provider: ClassVar[str] = "local"
    litellm_prefix: ClassVar[str] = "openai"
    api_path: ClassVar[str] = "/v1"
    reasoning_field: ClassVar[str | None] = "reasoning_content"
    served_model: str = "local-model"

    async def handle(self, request: RecordedRequest) -> Response:
        if request.method == "GET" and request.path in ("/v1/models", "/models"):
            model = {
                "id": self.served_model,
                "object": "model",
                "created": self.now(),
                "owned_by": "llamacpp",
            }
            return Response.json({"object": "list", "data": [model]})
        if request.method == "GET" and request.path == "/health":
            return Response.json({"status": "ok"})
        return await super().handle(request)

    def usage_payload(self, replies: list[Reply]) -> dict[str, Any]:
        usage = super().usage_payload(replies)
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = usage["prompt_tokens"] - cached
        return usage
