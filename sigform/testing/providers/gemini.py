"""Google Gemini API (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent``): JSON, server-sent events (``?alt=sse``) or a streamed JSON array.

A ``GenerateContentResponse`` has ``candidates[].content.parts``: reasoning as a text part with
``"thought": true``, the answer as text parts, tool calls as ``functionCall`` parts with an
``args`` object and -- unlike every other provider -- no id (calls and their
``functionResponse`` parts are matched by position; newer models add an ``id``, which the
fake sends only when the scripted call has one). The first part after the thoughts carries
the ``thoughtSignature``. ``finishReason`` is ``STOP`` even for tool calls, ``MAX_TOKENS``,
``SAFETY``. ``usageMetadata`` counts ``thoughtsTokenCount`` outside ``candidatesTokenCount``
and ``cachedContentTokenCount`` inside ``promptTokenCount``. Streams send the parts across
chunks, each chunk a whole response; only the last has ``finishReason`` and final usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from sigform.testing.providers.base import FakeProvider, pieces, sse
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_object
from sigform.testing.providers.server import RecordedRequest

__all__ = ["GeminiFake"]

_ROUTE = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP", "content_filter": "SAFETY"}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _count_parts(content: dict[str, Any], *names: str) -> int:
    # the API accepts proto field names in camelCase and snake_case alike
    parts = content.get("parts", [])
    return sum(1 for part in parts if isinstance(part, dict) and any(name in part for name in names))


def _function_calls(content: dict[str, object]) -> int:
    return _count_parts(content, "functionCall", "function_call")


def _function_responses(content: dict[str, object]) -> int:
    return _count_parts(content, "functionResponse", "function_response")


class GeminiFake(FakeProvider):
    """Answers like the Gemini API (litellm ``gemini/<model>``)."""

    provider: ClassVar[str] = "gemini"
    litellm_prefix: ClassVar[str] = "gemini"
    api_path: ClassVar[str] = "/v1beta"
    supports_candidates: ClassVar[bool] = True

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and _ROUTE.search(request.path) is not None

    def wants_stream(self, request: RecordedRequest) -> bool:
        return request.path.endswith(":streamGenerateContent")

    def requested_model(self, request: RecordedRequest) -> str:
        match = _ROUTE.search(request.path)
        return match.group("model") if match else "gemini"

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        contents = request.json.get("contents")
        if not isinstance(contents, list) or not contents:
            return "* GenerateContentRequest.contents: contents is not specified"
        for i, content in enumerate(contents):
            if content.get("role", "user") not in ("user", "model"):
                return f"Please use a valid role: user, model. Got {content.get('role')!r} in contents[{i}]"
            answered = _function_responses(content)
            if answered and (i == 0 or answered != _function_calls(contents[i - 1])):
                return (
                    "Please ensure that the number of function response parts is equal to the number "
                    "of function call parts of the function call turn."
                )
        return None

    # -- shapes ----------------------------------------------------------------------------
    def parts(self, reply: Reply) -> list[dict[str, Any]]:
        """The parts: thoughts, answer, function calls; the signature on the first after thoughts."""
        parts: list[dict[str, object]] = []
        if reply.reasoning is not None:
            parts.append({"text": reply.reasoning, "thought": True})
        answer: list[dict[str, object]] = []
        if reply.text or not reply.tool_calls:
            answer.append({"text": reply.text})
        for call in reply.tool_calls:
            function: dict[str, object] = {"name": call.name, "args": arguments_object(call, self.provider)}
            if call.id is not None:
                function["id"] = call.id
            answer.append({"functionCall": function})
        if reply.reasoning is not None or reply.signature is not None:
            answer[0] = {**answer[0], "thoughtSignature": reply.thinking_signature}
        return parts + answer

    @staticmethod
    def usage_metadata(replies: list[Reply], *, final: bool = True) -> dict[str, Any]:
        first = replies[0].usage
        prompt = first.prompt_tokens
        details = [{"modality": "TEXT", "tokenCount": prompt}]
        if not final:
            return {"promptTokenCount": prompt, "totalTokenCount": prompt, "promptTokensDetails": details}
        thoughts = sum(r.usage.reasoning_tokens for r in replies)
        candidates = sum(r.usage.completion_tokens for r in replies) - thoughts
        usage: dict[str, object] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates + thoughts,
            "promptTokensDetails": details,
        }
        if first.cached_tokens:
            usage["cachedContentTokenCount"] = first.cached_tokens
            usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": first.cached_tokens}]
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        return usage

    def _response(
        self, candidates: list[dict[str, object]], usage: dict[str, object], model: str, rid: str
    ) -> dict[str, object]:
        return {"candidates": candidates, "usageMetadata": usage, "modelVersion": model, "responseId": rid}

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        candidates = [
            {
                "content": {"parts": self.parts(r), "role": "model"},
                "finishReason": _FINISH[r.stop],
                "index": i,
            }
            for i, r in enumerate(replies)
        ]
        return self._response(candidates, self.usage_metadata(replies), model, self.make_id("", 22))

    def _chunks(self, replies: list[Reply], model: str) -> Iterator[dict[str, object]]:
        rid = self.make_id("", 22)
        partial = self.usage_metadata(replies, final=False)
        for i, reply in enumerate(replies):
            split: list[dict[str, object]] = []
            for part in self.parts(reply):
                text = part.get("text")
                if text is None or not text:
                    split.append(part)
                    continue
                # text streams in pieces: the thought flag marks every piece, the signature only the first
                extra = {k: v for k, v in part.items() if k != "text"}
                for k, piece in enumerate(pieces(text, reply.chunk_chars)):
                    split.append({"text": piece, **extra})
                    if k == 0:
                        extra.pop("thoughtSignature", None)
            last = len(split) - 1
            for j, part in enumerate(split):
                candidate: dict[str, object] = {"content": {"parts": [part], "role": "model"}, "index": i}
                done = j == last and i == len(replies) - 1
                if j == last:
                    candidate["finishReason"] = _FINISH[reply.stop]
                usage = self.usage_metadata(replies) if done else partial
                yield self._response([candidate], usage, model, rid)

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        chunks = list(self._chunks(replies, model))
        if request.query.get("alt") == "sse":
            return [sse(chunk) for chunk in chunks]
        # without alt=sse Gemini streams one JSON array, element by element
        encoded = [json.dumps(chunk, ensure_ascii=False) for chunk in chunks]
        return [("[" if i == 0 else "\n,").encode() + e.encode() for i, e in enumerate(encoded)] + [b"]"]

    def stream_headers(self, request: RecordedRequest) -> list[tuple[str, str]]:
        if request.query.get("alt") == "sse":
            return super().stream_headers(request)
        return [("content-type", "application/json; charset=UTF-8")]

    def error_payload(self, error: ErrorReply) -> object:
        status = _STATUS.get(error.status, "INTERNAL" if error.status >= 500 else "FAILED_PRECONDITION")
        payload: dict[str, object] = {"code": error.status, "message": error.message, "status": status}
        if error.retry_after is not None:
            delay = f"{error.retry_after:g}s"
            payload["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
        return {"error": payload}
