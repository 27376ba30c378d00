"""Anthropic Messages (``POST /v1/messages``): JSON and named server-sent events.

Non-streamed: a ``message`` whose ``content`` lists a ``thinking`` block (with its
``signature``), a ``text`` block and ``tool_use`` blocks (``toolu_...`` ids, ``input`` as an
object); ``stop_reason`` is ``end_turn`` / ``max_tokens`` / ``tool_use`` / ``refusal``; usage
splits the prompt into ``input_tokens``, ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` (Anthropic reports no separate reasoning-token count).
Streamed: ``message_start``, per block ``content_block_start`` / ``content_block_delta``
(``thinking_delta``, ``signature_delta``, ``text_delta``, ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and
``message_stop``, each as ``event: <type>`` plus ``data:``.

The fake rejects what the real API rejects most often: a missing ``max_tokens`` and a
``tool_result`` whose ``tool_use_id`` matches no earlier ``tool_use``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from sigform.testing.providers.base import FakeProvider, pieces, sse
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_object
from sigform.testing.providers.server import RecordedRequest

__all__ = ["AnthropicFake"]

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _tool_use_ids(body: dict[str, Any]) -> list[str]:
    return [
        block.get("id", "")
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


class AnthropicFake(FakeProvider):
    """Answers like Anthropic's Messages API (litellm ``anthropic/<model>``)."""

    provider: ClassVar[str] = "anthropic"
    litellm_prefix: ClassVar[str] = "anthropic"
    api_path: ClassVar[str] = ""

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path == "/v1/messages"

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        body = request.json
        for key in ("model", "messages", "max_tokens"):
            if key not in body:
                return f"{key}: Field required"
        known = set(_tool_use_ids(body))
        for i, message in enumerate(body["messages"]):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                is_result = isinstance(block, dict) and block.get("type") == "tool_result"
                if is_result and block.get("tool_use_id") not in known:
                    return (
                        f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )
        return None

    # -- shapes ----------------------------------------------------------------------------
    def _tool_id(self, call_id: str | None) -> str:
        return call_id if call_id is not None else self.make_id("toolu_01", 22)

    @staticmethod
    def usage_payload(reply: Reply, *, output_tokens: int | None = None) -> dict[str, Any]:
        u = reply.usage
        return {
            "input_tokens": u.prompt_tokens - u.cached_tokens - reply.cache_write_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": u.cached_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": reply.cache_write_tokens,
                "ephemeral_1h_input_tokens": 0,
            },
            "output_tokens": u.completion_tokens if output_tokens is None else output_tokens,
            "service_tier": "standard",
        }

    def blocks(self, reply: Reply) -> list[dict[str, Any]]:
        """The ``content`` blocks of the message, in the order Anthropic sends them."""
        blocks: list[dict[str, object]] = []
        if reply.reasoning is not None:
            blocks.append(
                {"type": "thinking", "thinking": reply.reasoning, "signature": reply.thinking_signature}
            )
        if reply.text or not reply.tool_calls:
            blocks.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": self._tool_id(call.id),
                    "name": call.name,
                    "input": arguments_object(call, self.provider),
                }
            )
        return blocks

    def _message(
        self, reply: Reply, model: str, content: list[dict[str, object]], stop: str | None
    ) -> dict[str, object]:
        return {
            "id": self.make_id("msg_01", 22),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
        }

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        reply = replies[0]
        message = self._message(reply, model, self.blocks(reply), _STOP_REASONS[reply.stop])
        message["usage"] = self.usage_payload(reply)
        return message

    def _block_events(self, index: int, block: dict[str, Any], size: int) -> Iterator[bytes]:
        kind = block["type"]
        if kind == "thinking":
            yield _event(
                "content_block_start", index=index, content_block={**block, "thinking": "", "signature": ""}
            )
            for piece in pieces(block["thinking"], size):
                yield _event(
                    "content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece}
                )
            delta = {"type": "signature_delta", "signature": block["signature"]}
            yield _event("content_block_delta", index=index, delta=delta)
        elif kind == "text":
            yield _event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in pieces(block["text"], size):
                yield _event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            yield _event("content_block_start", index=index, content_block={**block, "input": {}})
            arguments = json.dumps(block["input"], separators=(",", ":"), ensure_ascii=False)
            for piece in pieces(arguments, size):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield _event("content_block_delta", index=index, delta=delta)
        yield _event("content_block_stop", index=index)

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        reply = replies[0]
        start = self._message(reply, model, [], None)
        start["usage"] = self.usage_payload(reply, output_tokens=1)
        yield _event("message_start", message=start)
        yield _event("ping")
        for index, block in enumerate(self.blocks(reply)):
            yield from self._block_events(index, block, reply.chunk_chars)
        delta = {"stop_reason": _STOP_REASONS[reply.stop], "stop_sequence": None}
        yield _event("message_delta", delta=delta, usage={"output_tokens": reply.usage.completion_tokens})
        yield _event("message_stop")

    def error_payload(self, error: ErrorReply) -> object:
        kind = _ERROR_TYPES.get(error.status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": error.message},
            "request_id": self._request_id(),
        }

    def _request_id(self) -> str:
        return self.make_id("req_011", 21)

    def response_headers(self) -> list[tuple[str, str]]:
        return [("request-id", self._request_id()), ("anthropic-organization-id", "loopback-org")]


def _event(kind: str, **fields: object) -> bytes:
    return sse({"type": kind, **fields}, event=kind)
