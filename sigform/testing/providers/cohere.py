"""Cohere Chat v2 (``POST /v2/chat``): JSON and named server-sent events.

A v2 response has ``message.content`` as a list of ``text`` (and, for reasoning models,
``thinking``) items; when the model calls tools, ``message.tool_plan`` holds its prose and
``message.tool_calls`` the calls (ids like ``get_weather_7a2k9x4p1m3q``, JSON-string
``arguments``). ``finish_reason`` is ``COMPLETE`` / ``MAX_TOKENS`` / ``TOOL_CALL``; usage has
``billed_units`` and ``tokens`` (input/output) and ``cached_tokens``. Streams are
``message-start``, ``content-start`` / ``content-delta`` / ``content-end`` per content item,
``tool-plan-delta``, ``tool-call-start`` / ``tool-call-delta`` / ``tool-call-end`` per call, and
``message-end`` with finish reason and usage, each as ``event: <type>`` plus ``data:``, then
``data: [DONE]``.

Cohere reports no reasoning-token count; a scripted reply's text becomes the ``tool_plan``
when it also calls tools, as Cohere answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, ClassVar

from sigform.testing.providers.base import FakeProvider, pieces, sse
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_json
from sigform.testing.providers.server import RecordedRequest

__all__ = ["CohereFake"]

_FINISH = {"stop": "COMPLETE", "length": "MAX_TOKENS", "tool_calls": "TOOL_CALL"}


class CohereFake(FakeProvider):
    """Answers like Cohere's v2 chat API (litellm ``cohere/<model>``, ``api_base`` ending ``/v2/chat``)."""

    provider: ClassVar[str] = "cohere"
    litellm_prefix: ClassVar[str] = "cohere"
    api_path: ClassVar[str] = "/v2/chat"

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path == "/v2/chat"

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        body = request.json
        for key in ("model", "messages"):
            if key not in body:
                return f"invalid request: {key} must be specified"
        return None

    # -- shapes ----------------------------------------------------------------------------
    @staticmethod
    def _finish(reply: Reply) -> str:
        if reply.stop not in _FINISH:
            raise ValueError(f"Cohere has no finish reason for {reply.stop!r}")
        return _FINISH[reply.stop]

    def _calls(self, reply: Reply) -> list[dict[str, Any]]:
        return [
            {
                "id": call.id
                if call.id is not None
                else self.make_id(f"{call.name}_", 12, "abcdefghijklmnopqrstuvwxyz0123456789"),
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_json(call)},
            }
            for call in reply.tool_calls
        ]

    @staticmethod
    def _content(reply: Reply) -> list[dict[str, Any]]:
        content: list[dict[str, object]] = []
        if reply.reasoning is not None:
            content.append({"type": "thinking", "thinking": reply.reasoning})
        if not reply.tool_calls:
            content.append({"type": "text", "text": reply.text})
        return content

    @staticmethod
    def usage_payload(reply: Reply) -> dict[str, Any]:
        u = reply.usage
        counts = {"input_tokens": u.prompt_tokens, "output_tokens": u.completion_tokens}
        return {"billed_units": dict(counts), "tokens": dict(counts), "cached_tokens": u.cached_tokens}

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        reply = replies[0]
        message: dict[str, object] = {"role": "assistant"}
        content = self._content(reply)
        if content:
            message["content"] = content
        if reply.tool_calls:
            message["tool_plan"] = reply.text
            message["tool_calls"] = self._calls(reply)
        finish = self._finish(reply)
        return {
            "id": str(uuid.uuid4()),
            "message": message,
            "finish_reason": finish,
            "usage": self.usage_payload(reply),
        }

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        reply = replies[0]
        finish = self._finish(reply)
        start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
        yield _event("message-start", id=str(uuid.uuid4()), delta={"message": start})
        for index, item in enumerate(self._content(reply)):
            kind = item["type"]
            yield _event(
                "content-start", index=index, delta={"message": {"content": {"type": kind, kind: ""}}}
            )
            for piece in pieces(item[kind], reply.chunk_chars):
                yield _event("content-delta", index=index, delta={"message": {"content": {kind: piece}}})
            yield _event("content-end", index=index)
        if reply.tool_calls:
            for piece in pieces(reply.text, reply.chunk_chars):
                yield _event("tool-plan-delta", delta={"message": {"tool_plan": piece}})
            for index, call in enumerate(self._calls(reply)):
                head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
                yield _event("tool-call-start", index=index, delta={"message": {"tool_calls": head}})
                for piece in pieces(call["function"]["arguments"], reply.chunk_chars):
                    delta = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
                    yield _event("tool-call-delta", index=index, delta=delta)
                yield _event("tool-call-end", index=index)
        yield _event("message-end", delta={"finish_reason": finish, "usage": self.usage_payload(reply)})
        yield b"data: [DONE]\n\n"

    def error_payload(self, error: ErrorReply) -> object:
        return {"id": str(uuid.uuid4()), "message": error.message}


def _event(kind: str, **fields: object) -> bytes:
    return sse({"type": kind, **fields}, event=kind)
