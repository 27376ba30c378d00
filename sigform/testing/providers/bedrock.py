"""AWS Bedrock Converse (``POST /model/{modelId}/converse`` and ``/converse-stream``).

Converse answers ``output.message.content`` blocks: ``reasoningContent.reasoningText``
(``text`` + ``signature``), ``text`` and ``toolUse`` (``tooluse_...`` ids, ``input`` object);
``stopReason`` is ``end_turn`` / ``max_tokens`` / ``tool_use`` / ``content_filtered``; usage
counts ``inputTokens`` without the cache, ``cacheReadInputTokens`` and
``cacheWriteInputTokens`` beside it. ``converse-stream`` is not server-sent events but the
binary AWS event stream (``application/vnd.amazon.eventstream``): each message is a prelude
(total and header lengths, CRC32), typed headers (``:event-type``, ``:content-type``,
``:message-type``), a JSON payload and a CRC32 of the whole; the events are ``messageStart``,
``contentBlockStart`` (tool use only), ``contentBlockDelta``, ``contentBlockStop``,
``messageStop`` and ``metadata`` (usage). Requests are SigV4-signed by the client; the fake
records the (redacted) signature headers and does not check them.

Point litellm at it with ``api_base=fake.base_url`` (``aws_bedrock_runtime_endpoint`` works too) and
any ``aws_access_key_id`` / ``aws_secret_access_key`` / ``aws_region_name``.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar
from urllib.parse import unquote

from sigform.testing.providers.base import FakeProvider, pieces
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_object
from sigform.testing.providers.server import RecordedRequest

__all__ = ["BedrockConverseFake", "event_stream_message"]

_ROUTE = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream)$")
_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "content_filtered",
}
_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    # type 7 = string: 1-byte name length, name, type, 2-byte value length, value
    return struct.pack("!B", len(raw_name)) + raw_name + struct.pack("!BH", 7, len(raw_value)) + raw_value


def event_stream_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message carrying ``payload`` as the JSON of event ``event_type``."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", zlib.crc32(message))


class BedrockConverseFake(FakeProvider):
    """Answers like Bedrock's Converse API (litellm ``bedrock/converse/<model id>``)."""

    provider: ClassVar[str] = "bedrock"
    litellm_prefix: ClassVar[str] = "bedrock/converse"
    api_path: ClassVar[str] = ""

    def litellm_kwargs(self, name: str, api_key: str = "test-key") -> dict[str, object]:
        """Model, endpoint and fake AWS credentials (``api_key`` is the fake secret key)."""
        return {
            "model": self.model(name),
            "api_base": self.base_url,
            "aws_access_key_id": "AKIDLOOPBACKTEST",
            "aws_secret_access_key": api_key,
            "aws_region_name": "us-east-1",
        }

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and _ROUTE.match(request.path) is not None

    def wants_stream(self, request: RecordedRequest) -> bool:
        return request.path.endswith("/converse-stream")

    def requested_model(self, request: RecordedRequest) -> str:
        match = _ROUTE.match(request.path)
        return unquote(match.group("model")) if match else "bedrock"

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        messages = request.json.get("messages")
        if not isinstance(messages, list) or not messages:
            return "The 'messages' field is required and must not be empty."
        announced: set[str] = set()
        for message in messages:
            for block in message.get("content") or []:
                if "toolUse" in block:
                    announced.add(block["toolUse"].get("toolUseId"))
                if "toolResult" in block and block["toolResult"].get("toolUseId") not in announced:
                    return (
                        "The toolUseId in a toolResult block must match a toolUse block of the previous turn."
                    )
        return None

    # -- shapes ----------------------------------------------------------------------------
    def blocks(self, reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, object]] = []
        if reply.reasoning is not None:
            text = {"text": reply.reasoning, "signature": reply.thinking_signature}
            blocks.append({"reasoningContent": {"reasoningText": text}})
        if reply.text or not reply.tool_calls:
            blocks.append({"text": reply.text})
        for call in reply.tool_calls:
            call_id = call.id if call.id is not None else self.make_id("tooluse_", 22)
            use = {"toolUseId": call_id, "name": call.name, "input": arguments_object(call, self.provider)}
            blocks.append({"toolUse": use})
        return blocks

    @staticmethod
    def usage_payload(reply: Reply) -> dict[str, Any]:
        u = reply.usage
        fresh = u.prompt_tokens - u.cached_tokens - reply.cache_write_tokens
        return {
            "inputTokens": fresh,
            "outputTokens": u.completion_tokens,
            "totalTokens": u.prompt_tokens + u.completion_tokens,
            "cacheReadInputTokens": u.cached_tokens,
            "cacheWriteInputTokens": reply.cache_write_tokens,
        }

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        reply = replies[0]
        return {
            "output": {"message": {"role": "assistant", "content": self.blocks(reply)}},
            "stopReason": _STOP[reply.stop],
            "usage": self.usage_payload(reply),
            "metrics": {"latencyMs": 1},
        }

    def _events(self, reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
        yield "messageStart", {"role": "assistant"}
        size = reply.chunk_chars
        for index, block in enumerate(self.blocks(reply)):
            at = {"contentBlockIndex": index}
            if "reasoningContent" in block:
                text = block["reasoningContent"]["reasoningText"]
                for piece in pieces(text["text"], size):
                    yield "contentBlockDelta", {**at, "delta": {"reasoningContent": {"text": piece}}}
                yield (
                    "contentBlockDelta",
                    {**at, "delta": {"reasoningContent": {"signature": text["signature"]}}},
                )
            elif "text" in block:
                for piece in pieces(block["text"], size):
                    yield "contentBlockDelta", {**at, "delta": {"text": piece}}
            else:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                yield "contentBlockStart", {**at, "start": start}
                arguments = json.dumps(use["input"], separators=(",", ":"), ensure_ascii=False)
                for piece in pieces(arguments, size):
                    yield "contentBlockDelta", {**at, "delta": {"toolUse": {"input": piece}}}
            yield "contentBlockStop", at
        yield "messageStop", {"stopReason": _STOP[reply.stop]}
        yield "metadata", {"usage": self.usage_payload(reply), "metrics": {"latencyMs": 1}}

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        return [event_stream_message(kind, payload) for kind, payload in self._events(replies[0])]

    def stream_headers(self, request: RecordedRequest) -> list[tuple[str, str]]:
        return [("content-type", "application/vnd.amazon.eventstream"), *self.response_headers()]

    def error_payload(self, error: ErrorReply) -> object:
        return {"message": error.message}

    def error_response(self, error: ErrorReply) -> Any:
        response = super().error_response(error)
        kind = _ERRORS.get(
            error.status, "InternalServerException" if error.status >= 500 else "ValidationException"
        )
        response.headers.append(
            ("x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/")
        )
        return response

    def response_headers(self) -> list[tuple[str, str]]:
        return [("x-amzn-requestid", self.make_id("", 32, "0123456789abcdef"))]
