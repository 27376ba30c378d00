"""Mistral chat completions (``POST /v1/chat/completions``): OpenAI-like, with Mistral's quirks.

Differences from OpenAI that the fake reproduces: tool call ids are exactly 9 characters of
``[a-zA-Z0-9]`` (and requests whose tool ids are not are rejected, as Mistral does);
reasoning models (Magistral) answer with ``content`` as a list of chunks, a ``thinking`` chunk
whose ``thinking`` is itself a list of text chunks, then ``text`` chunks; streams send each
tool call whole in one delta, and always end with a chunk carrying ``finish_reason`` and
``usage`` (no ``stream_options`` needed). Usage has no cached- or reasoning-token details.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from sigform.testing.providers.base import pieces, sse
from sigform.testing.providers.openai_chat import OpenAIChatFake
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_json
from sigform.testing.providers.server import RecordedRequest

__all__ = ["MistralFake"]

_TOOL_ID = re.compile(r"[a-zA-Z0-9]{9}")


def _tool_ids(body: dict[str, Any]) -> Iterator[str]:
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            yield str(call.get("id"))
        if message.get("role") == "tool":
            yield str(message.get("tool_call_id"))


class MistralFake(OpenAIChatFake):
    """Answers like Mistral's chat completions API (litellm ``mistral/<model>``)."""

    provider: ClassVar[str] = "mistral"
    litellm_prefix: ClassVar[str] = "mistral"
    api_path: ClassVar[str] = ""
    supports_candidates: ClassVar[bool] = True

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        for tool_id in _tool_ids(request.json):
            if not _TOOL_ID.fullmatch(tool_id):
                return f"Tool call id was {tool_id} but must be a-z, A-Z, 0-9, with a length of 9."
        return None

    def _tool_id(self, reply_id: str | None) -> str:
        return reply_id if reply_id is not None else self.make_id("", 9)

    def usage_payload(self, replies: list[Reply]) -> dict[str, Any]:
        if replies[0].usage.cached_tokens:
            raise ValueError("Mistral reports no cached prompt tokens; do not script usage.cached_tokens")
        prompt = replies[0].usage.prompt_tokens
        completion = sum(r.usage.completion_tokens for r in replies)
        return {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}

    @staticmethod
    def _thinking(text: str) -> dict[str, object]:
        return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}

    def message(self, reply: Reply) -> dict[str, Any]:
        content: object = reply.text if reply.text or not reply.tool_calls else None
        if reply.reasoning is not None:
            content = [self._thinking(reply.reasoning), {"type": "text", "text": reply.text}]
        message: dict[str, object] = {"role": "assistant", "content": content, "prefix": False}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._tool_id(call.id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_json(call)},
                    "index": index,
                }
                for index, call in enumerate(reply.tool_calls)
            ]
        return message

    def deltas(self, reply: Reply) -> Iterator[dict[str, Any]]:
        yield {"role": "assistant", "content": ""}
        if reply.reasoning is not None:
            for piece in pieces(reply.reasoning, reply.chunk_chars):
                yield {"content": [self._thinking(piece)]}
        for piece in pieces(reply.text, reply.chunk_chars):
            yield {"content": piece}
        if reply.tool_calls:
            yield {"content": "", "tool_calls": self.message(reply)["tool_calls"]}

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        envelope: dict[str, object] = {"id": self.make_id("", 32, "0123456789abcdef")}
        envelope["object"] = "chat.completion.chunk"
        envelope |= {"created": self.now(), "model": model}
        for i, reply in enumerate(replies):
            for delta in self.deltas(reply):
                yield sse({**envelope, "choices": [{"index": i, "delta": delta, "finish_reason": None}]})
            last = {"index": i, "delta": {"content": ""}, "finish_reason": self.finish_reason(reply)}
            usage = {"usage": self.usage_payload(replies)} if i == len(replies) - 1 else {}
            yield sse({**envelope, "choices": [last], **usage})
        yield b"data: [DONE]\n\n"

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        body = super().render(replies, request, model)
        for key in ("service_tier", "system_fingerprint"):
            body.pop(key, None)
        body["id"] = self.make_id("", 32, "0123456789abcdef")
        for choice in body["choices"]:
            choice.pop("logprobs", None)
        return body

    def error_payload(self, error: ErrorReply) -> object:
        kind = "invalid_request_error" if error.status < 500 else "internal_server_error"
        return {
            "object": "error",
            "message": error.message,
            "type": kind,
            "param": None,
            "code": str(error.status),
        }

    def response_headers(self) -> list[tuple[str, str]]:
        return [("x-kong-request-id", self.make_id("", 32, "0123456789abcdef"))]
