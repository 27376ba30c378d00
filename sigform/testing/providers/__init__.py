"""Loopback fake provider servers that answer in each provider's real wire format.

Each fake is an HTTP/1.1 server on ``127.0.0.1`` (a free port, its own thread) that follows a
script of neutral :class:`Reply` objects and renders them the way its provider does -- JSON
and server-sent-event streams, tool calls, reasoning, finish reasons, usage, errors with
``Retry-After`` -- while recording every request (credentials redacted) for assertions::

    from sigform.testing.providers import AnthropicFake, Reply, ToolCall

    with AnthropicFake(Reply("Paris", reasoning="The capital...")) as fake:
        lm = sigform.LM(fake.model("claude-sonnet-4-5"), api_base=fake.api_base, api_key="k")
        lm([{"role": "user", "content": "Capital of France?"}])
        assert fake.last_request.json["max_tokens"] > 0

Point litellm at a fake with ``fake.model(name)`` and ``fake.api_base`` (or
``fake.litellm_kwargs(name)``).
"""

from __future__ import annotations

from sigform.testing.providers.anthropic import AnthropicFake
from sigform.testing.providers.base import FakeProvider
from sigform.testing.providers.bedrock import BedrockConverseFake
from sigform.testing.providers.cohere import CohereFake
from sigform.testing.providers.gemini import GeminiFake
from sigform.testing.providers.local import LocalServerFake
from sigform.testing.providers.mistral import MistralFake
from sigform.testing.providers.openai_chat import OpenAIChatFake
from sigform.testing.providers.openai_responses import OpenAIResponsesFake
from sigform.testing.providers.replies import ErrorReply, Reply, ToolCall, Usage
from sigform.testing.providers.server import LoopbackServer, RecordedRequest, Response

__all__ = [
    "AnthropicFake",
    "BedrockConverseFake",
    "CohereFake",
    "ErrorReply",
    "FakeProvider",
    "GeminiFake",
    "LocalServerFake",
    "LoopbackServer",
    "MistralFake",
    "OpenAIChatFake",
    "OpenAIResponsesFake",
    "RecordedRequest",
    "Reply",
    "Response",
    "ToolCall",
    "Usage",
]

# Every fake, by a short name (for parametrized tests).
FAKES: dict[str, type[FakeProvider]] = {
    "openai_chat": OpenAIChatFake,
    "openai_responses": OpenAIResponsesFake,
    "anthropic": AnthropicFake,
    "gemini": GeminiFake,
    "mistral": MistralFake,
    "cohere": CohereFake,
    "local": LocalServerFake,
    "bedrock": BedrockConverseFake,
}
