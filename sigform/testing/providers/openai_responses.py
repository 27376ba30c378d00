"""OpenAI Responses (``POST /v1/responses``): a ``response`` object and typed streaming events.

The answer is a list of ``output`` items: a ``reasoning`` item (``rs_...``) whose ``summary``
holds ``summary_text`` parts (OpenAI never returns the raw reasoning, only this summary), a
``message`` item (``msg_...``) with ``output_text`` content, and ``function_call`` items
(``fc_...`` item id, ``call_...`` call id, JSON-string ``arguments``). ``status`` is
``completed``, or ``incomplete`` with ``incomplete_details.reason`` (``max_output_tokens``,
``content_filter``); tool calls have no finish reason of their own. Usage is
``input_tokens`` (with ``input_tokens_details.cached_tokens``) and ``output_tokens`` (with
``output_tokens_details.reasoning_tokens``). Streams are named events, each with a
``sequence_number``: ``response.created``, ``response.in_progress``, per item
``response.output_item.added`` ... ``response.output_item.done`` (with the summary, text and
argument delta/done events in between), and ``response.completed`` / ``response.incomplete``
carrying the whole response.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from sigform.testing.providers.base import FakeProvider, pieces, sse
from sigform.testing.providers.openai_chat import openai_error_payload
from sigform.testing.providers.replies import ErrorReply, Reply, arguments_json
from sigform.testing.providers.server import RecordedRequest

__all__ = ["OpenAIResponsesFake"]

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


class OpenAIResponsesFake(FakeProvider):
    """Answers like OpenAI's Responses API (litellm ``openai/responses/<model>``)."""

    provider: ClassVar[str] = "openai"
    litellm_prefix: ClassVar[str] = "openai/responses"
    api_path: ClassVar[str] = "/v1"

    def matches(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path.endswith("/responses")

    def validate(self, request: RecordedRequest) -> str | None:
        problem = super().validate(request)
        if problem is not None:
            return problem
        body = request.json
        if "model" not in body:
            return "Missing required parameter: 'model'."
        if "input" not in body and "previous_response_id" not in body:
            return "Missing required parameter: 'input'."
        calls = {item.get("call_id") for item in _items(body) if item.get("type") == "function_call"}
        for item in _items(body):
            if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
        return None

    # -- shapes ----------------------------------------------------------------------------
    def items(self, reply: Reply) -> list[dict[str, Any]]:
        """The completed ``output`` items, in order."""
        items: list[dict[str, object]] = []
        if reply.reasoning is not None:
            summary = [{"type": "summary_text", "text": reply.reasoning}] if reply.reasoning else []
            items.append(
                {"id": self.make_id("rs_", 48, "0123456789abcdef"), "type": "reasoning", "summary": summary}
            )
        if reply.text or not reply.tool_calls:
            text = {"type": "output_text", "annotations": [], "logprobs": [], "text": reply.text}
            items.append(
                {
                    "id": self.make_id("msg_", 48, "0123456789abcdef"),
                    "type": "message",
                    "status": "incomplete" if reply.stop in _INCOMPLETE else "completed",
                    "content": [text],
                    "role": "assistant",
                }
            )
        for call in reply.tool_calls:
            items.append(
                {
                    "id": self.make_id("fc_", 48, "0123456789abcdef"),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": arguments_json(call),
                    "call_id": call.id if call.id is not None else self.make_id("call_", 24),
                    "name": call.name,
                }
            )
        return items

    @staticmethod
    def usage_payload(reply: Reply) -> dict[str, Any]:
        u = reply.usage
        return {
            "input_tokens": u.prompt_tokens,
            "input_tokens_details": {"cached_tokens": u.cached_tokens},
            "output_tokens": u.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "total_tokens": u.prompt_tokens + u.completion_tokens,
        }

    def _response(
        self, reply: Reply, request: RecordedRequest, model: str, rid: str, created: int
    ) -> dict[str, object]:
        body = request.json or {}
        return {
            "id": rid,
            "object": "response",
            "created_at": created,
            "status": "in_progress",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": model,
            "output": [],
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_p": body.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
        }

    def _finished(
        self, response: dict[str, object], reply: Reply, items: list[dict[str, object]]
    ) -> dict[str, object]:
        done = {**response, "output": items, "usage": self.usage_payload(reply), "status": "completed"}
        if reply.stop in _INCOMPLETE:
            done["status"] = "incomplete"
            done["incomplete_details"] = {"reason": _INCOMPLETE[reply.stop]}
        return done

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        reply = replies[0]
        response = self._response(
            reply, request, model, self.make_id("resp_", 48, "0123456789abcdef"), self.now()
        )
        return self._finished(response, reply, self.items(reply))

    def _item_events(self, index: int, item: dict[str, Any], size: int) -> Iterator[dict[str, object]]:
        kind = item["type"]
        opened = {**item, "status": "in_progress"} if "status" in item else dict(item)
        if kind == "reasoning":
            opened["summary"] = []
        elif kind == "message":
            opened["content"] = []
        else:
            opened["arguments"] = ""
        yield {"type": "response.output_item.added", "output_index": index, "item": opened}
        where = {"item_id": item["id"], "output_index": index}
        if kind == "reasoning":
            for s, part in enumerate(item["summary"]):
                yield {
                    "type": "response.reasoning_summary_part.added",
                    **where,
                    "summary_index": s,
                    "part": {"type": "summary_text", "text": ""},
                }
                for piece in pieces(part["text"], size):
                    yield {
                        "type": "response.reasoning_summary_text.delta",
                        **where,
                        "summary_index": s,
                        "delta": piece,
                    }
                yield {
                    "type": "response.reasoning_summary_text.done",
                    **where,
                    "summary_index": s,
                    "text": part["text"],
                }
                yield {
                    "type": "response.reasoning_summary_part.done",
                    **where,
                    "summary_index": s,
                    "part": part,
                }
        elif kind == "message":
            part = item["content"][0]
            where_part = {**where, "content_index": 0}
            yield {"type": "response.content_part.added", **where_part, "part": {**part, "text": ""}}
            for piece in pieces(part["text"], size):
                yield {"type": "response.output_text.delta", **where_part, "delta": piece, "logprobs": []}
            yield {"type": "response.output_text.done", **where_part, "text": part["text"], "logprobs": []}
            yield {"type": "response.content_part.done", **where_part, "part": part}
        else:
            for piece in pieces(item["arguments"], size):
                yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
            yield {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
        yield {"type": "response.output_item.done", "output_index": index, "item": item}

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        reply = replies[0]
        response = self._response(
            reply, request, model, self.make_id("resp_", 48, "0123456789abcdef"), self.now()
        )
        items = self.items(reply)
        done = self._finished(response, reply, items)
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": response},
            {"type": "response.in_progress", "response": response},
        ]
        for index, item in enumerate(items):
            events.extend(self._item_events(index, item, reply.chunk_chars))
        final = "response.incomplete" if done["status"] == "incomplete" else "response.completed"
        events.append({"type": final, "response": done})
        counter = itertools.count()
        return [sse({**event, "sequence_number": next(counter)}, event=event["type"]) for event in events]

    def error_payload(self, error: ErrorReply) -> object:
        return openai_error_payload(error)

    def response_headers(self) -> list[tuple[str, str]]:
        return [("x-request-id", self.make_id("req_", 32, "0123456789abcdef"))]


def _items(body: dict[str, object]) -> list[dict[str, object]]:
    value = body.get("input")
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
