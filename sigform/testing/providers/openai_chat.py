"""OpenAI Chat Completions (``POST /v1/chat/completions``): JSON and streamed chunks.

Non-streamed: ``chat.completion`` with ``choices[].message`` (``content``, ``tool_calls`` with
``call_...`` ids and JSON-string ``arguments``) and ``usage`` with
``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``.
Streamed: ``chat.completion.chunk`` deltas, tool calls as a head delta (id, name) followed by
argument fragments, a final delta with ``finish_reason``, then ``data: [DONE]``; usage comes
in one last chunk with empty ``choices`` only when ``stream_options.include_usage`` is set.

OpenAI does not return reasoning text from Chat Completions (only reasoning token counts);
OpenAI-compatible servers that do (DeepSeek, llama.cpp, vLLM) put it in
``reasoning_content`` -- set :attr:`OpenAIChatFake.reasoning_field` for them
(:class:`sigform.testing.providers.local.LocalServerFake` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from sigform.testing.providers.base import FakeProvider, pieces, sse
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_json
from sigform.testing.providers.server import RecordedRequest

__all__ = ["OpenAIChatFake", "openai_error_payload"]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class OpenAIChatFake(FakeProvider):
    """Answers like OpenAI's Chat Completions API (litellm ``openai/<model>``)."""

    provider: ClassVar[str] = "openai"
    litellm_prefix: ClassVar[str] = "openai"
    api_path: ClassVar[str] = "/v1"
    supports_candidates: ClassVar[bool] = True
    # Name of the message field carrying reasoning text; None: the provider sends none.
    reasoning_field: ClassVar[str | None] = None
    tool_id_prefix: ClassVar[str] = "call_"
    tool_id_length: ClassVar[int] = 24

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path.endswith("/chat/completions")

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        body = request.json
        for key in ("model", "messages"):
            if key not in body:
                return f"Missing required parameter: '{key}'."
        announced: set[str] = set()
        for i, message in enumerate(body["messages"]):
            announced.update(str(call.get("id")) for call in message.get("tool_calls") or [])
            if message.get("role") == "tool" and message.get("tool_call_id") not in announced:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a preceding "
                    "message with 'tool_calls'."
                )
        return None

    # -- pieces shared by both shapes ------------------------------------------------------
    def _tool_id(self, reply_id: str | None) -> str:
        return reply_id if reply_id is not None else self.make_id(self.tool_id_prefix, self.tool_id_length)

    def _check_reasoning(self, reply: Reply) -> None:
        if reply.reasoning is not None and self.reasoning_field is None:
            raise ValueError(
                f"{self.provider} Chat Completions returns no reasoning text (only reasoning token counts); "
                "script usage.reasoning_tokens, or use a fake with a reasoning_field"
            )

    def usage_payload(self, replies: list[Reply]) -> dict[str, Any]:
        """The ``usage`` object (all candidates together)."""
        prompt = replies[0].usage.prompt_tokens
        cached = replies[0].usage.cached_tokens
        completion = sum(r.usage.completion_tokens for r in replies)
        reasoning = sum(r.usage.reasoning_tokens for r in replies)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def finish_reason(self, reply: Reply) -> str:
        return reply.stop

    def _envelope(self, obj: str, model: str, response_id: str, created: int) -> dict[str, object]:
        return {
            "id": response_id,
            "object": obj,
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_loopback",
        }

    # -- non-streamed ----------------------------------------------------------------------
    def message(self, reply: Reply) -> dict[str, Any]:
        self._check_reasoning(reply)
        message: dict[str, object] = {
            "role": "assistant",
            "content": reply.text if reply.text or not reply.tool_calls else None,
            "refusal": None,
            "annotations": [],
        }
        if reply.reasoning is not None and self.reasoning_field:
            message[self.reasoning_field] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._tool_id(call.id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_json(call)},
                }
                for call in reply.tool_calls
            ]
        return message

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        body = self._envelope("chat.completion", model, self.make_id("chatcmpl-", 29), self.now())
        body["choices"] = [
            {"index": i, "message": self.message(r), "logprobs": None, "finish_reason": self.finish_reason(r)}
            for i, r in enumerate(replies)
        ]
        body["usage"] = self.usage_payload(replies)
        return body

    # -- streamed --------------------------------------------------------------------------
    def deltas(self, reply: Reply) -> Iterator[dict[str, Any]]:
        """The ``delta`` objects of one candidate, in order (the finish chunk excluded)."""
        self._check_reasoning(reply)
        first: dict[str, object] = {
            "role": "assistant",
            "content": "" if reply.text else None,
            "refusal": None,
        }
        yield first
        if reply.reasoning is not None and self.reasoning_field:
            for piece in pieces(reply.reasoning, reply.chunk_chars):
                yield {"content": None, self.reasoning_field: piece}
        for piece in pieces(reply.text, reply.chunk_chars):
            yield {"content": piece}
        for index, call in enumerate(reply.tool_calls):
            head = {"index": index, "id": self._tool_id(call.id), "type": "function"}
            yield {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}
            for piece in pieces(arguments_json(call), reply.chunk_chars):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        body = request.json or {}
        options = body.get("stream_options") or {}
        include_usage = bool(options.get("include_usage"))
        envelope = self._envelope("chat.completion.chunk", model, self.make_id("chatcmpl-", 29), self.now())
        extra = {"usage": None} if include_usage else {}

        def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**envelope, "choices": [choice], **extra})

        for i, reply in enumerate(replies):
            for delta in self.deltas(reply):
                yield chunk(i, delta)
            yield chunk(i, {}, self.finish_reason(reply))
        if include_usage:
            yield sse({**envelope, "choices": [], "usage": self.usage_payload(replies)})
        yield b"data: [DONE]\n\n"

    # -- errors ----------------------------------------------------------------------------
    def error_payload(self, error: ErrorReply) -> object:
        return openai_error_payload(error)

    def response_headers(self) -> list[tuple[str, str]]:
        return [("x-request-id", self.make_id("req_", 32, "0123456789abcdef"))]


def openai_error_payload(error: ErrorReply) -> dict[str, Any]:
    """OpenAI's error envelope: ``{"error": {"message", "type", "param", "code"}}``."""
    default = ("server_error" if error.status >= 500 else "invalid_request_error", None)
    kind, code = _ERROR_TYPES.get(error.status, default)
    return {"error": {"message": error.message, "type": kind, "param": None, "code": code}}
