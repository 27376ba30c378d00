"""How an agent talks to the LM: the prompt, the ``finish`` tool, and the two calling protocols.

* **native** (``lm.supports("tools")``): tools go in the request's ``tools``; calls come back as
  :class:`~sigform.lm.interface.ToolCall` values; the history holds an assistant message with
  ``tool_calls`` followed by one ``role="tool"`` message per call, in call order, with the call's
  id and the tool name (litellm turns these into each provider's shape; providers that match
  results by position get them in order).
* **text**: tools are described in the system prompt and the LM replies with one JSON object
  ``{"thought": ..., "tool_calls": [{"name": ..., "args": {...}}]}`` (the shape
  :class:`sigform.types.ToolCalls` reads); results come back in a user message.

Either way the LM ends by calling ``finish`` with the signature's output fields as arguments,
which are validated like any parsed output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sigform.lm.interface import Completion
from sigform.message import Message
from sigform.tools.runner import PendingCall
from sigform.tools.tool import Tool
from sigform.tools.trajectory import CallRecord

__all__ = ["FINISH", "NativeProtocol", "TextProtocol", "Turn", "finish_parameters"]

FINISH = "finish"


@dataclass
class Turn:
    """What one LM turn said: its thought, the calls it made, or why it could not be read."""

    thought: str
    calls: list[PendingCall] = field(default_factory=list)
    problem: str | None = None


def finish_parameters(signature: Any) -> dict[str, Any]:
    """JSON schema of the ``finish`` arguments: one property per output field."""
    from sigform.types import json_schema

    properties: dict[str, object] = {}
    for name, spec in signature.output_fields.items():
        schema = json_schema(spec.validation_annotation)
        if spec.desc:
            schema = {**schema, "description": spec.desc}
        properties[name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": list(signature.output_fields),
        "additionalProperties": False,
    }


def _finish_description(signature: Any) -> str:
    names = ", ".join(f"`{n}`" for n in signature.output_fields)
    return f"Give the final answer ({names}) and stop. Call it alone, once you have everything you need."


def _field_lines(fields: Mapping[str, Any]) -> list[str]:
    from sigform.types.names import type_name

    lines = []
    for name, spec in fields.items():
        desc = f": {spec.desc}" if spec.desc else ""
        lines.append(f"- `{name}` ({type_name(spec.annotation)}){desc}")
    return lines


def system_prompt(signature: Any, tools: Sequence[Tool], *, native: bool) -> str:
    """The agent's system message: the task, how to work, the tools (text mode) and tool notes."""
    parts = [signature.instructions.strip()]
    if signature.input_fields:
        parts.append("Inputs:\n" + "\n".join(_field_lines(signature.input_fields)))
    parts.append("Outputs:\n" + "\n".join(_field_lines(signature.output_fields)))
    parts.append(
        "Work step by step: think briefly, then call tools; their results come back to you. Call "
        "several tools at once when they do not depend on each other. When you have what you need, "
        f"call `{FINISH}` with the outputs as its arguments. A tool result that starts with "
        '"Error:" means the call failed; a declined call was refused by the user; do not repeat it '
        "unchanged."
    )
    if not native:
        listing = [t.format_for_prompt() for t in tools]
        finish_args = json.dumps(finish_parameters(signature), ensure_ascii=False)
        listing.append(
            f"- `{FINISH}`: {_finish_description(signature)}\n  arguments (JSON schema): {finish_args}"
        )
        parts.append("Tools:\n" + "\n".join(listing))
        parts.append(
            "Reply with exactly one JSON object and nothing else:\n"
            '{"thought": "<your reasoning>", "tool_calls": [{"name": "<tool name>", "args": {<arguments>}}]}'
        )
    notes = [t.system_prompt.strip() for t in tools if t.system_prompt and t.system_prompt.strip()]
    parts.extend(notes)
    return "\n\n".join(parts)


def user_prompt(signature: Any, inputs: Mapping[str, object]) -> str:
    """The task's inputs, one field per block."""
    from sigform.types import render_value

    blocks = [
        f"{name}:\n{render_value(inputs[name], spec.annotation)}"
        for name, spec in signature.input_fields.items()
        if name in inputs
    ]
    return "\n\n".join(blocks) if blocks else "(no inputs)"


def _ids(calls: Sequence[tuple[str, Any, str | None]], step: int) -> list[PendingCall]:
    # Every call needs an id for the history; providers (and text replies) may leave it out.
    seen: set[str] = set()
    out = []
    for i, (name, args, call_id) in enumerate(calls):
        ident = call_id or f"call_{step}_{i + 1}"
        if ident in seen:
            ident = f"{ident}_{i + 1}"
        seen.add(ident)
        out.append(PendingCall(name=name, arguments=args, id=ident))
    return out


def _arguments_json(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments  # what the provider sent, even if it is not valid JSON
    from pydantic_core import to_jsonable_python

    return json.dumps(to_jsonable_python(dict(arguments), fallback=str), ensure_ascii=False)


class NativeProtocol:
    """Native function calling (see the module docstring)."""

    native = True

    def __init__(self, images: bool = True) -> None:
        self.images = images  # the model takes image parts (else tool images stay described in text)

    def request_kwargs(self, signature: object, tools: Sequence[Tool]) -> dict[str, Any]:
        finish = {
            "type": "function",
            "function": {
                "name": FINISH,
                "description": _finish_description(signature),
                "parameters": finish_parameters(signature),
            },
        }
        return {"tools": [t.to_openai() for t in tools] + [finish]}

    def read(self, completion: Completion, step: int) -> Turn:
        thought = completion.text or completion.reasoning or ""
        calls = _ids([(c.name, c.arguments, c.id) for c in completion.tool_calls], step)
        if not calls:
            return Turn(
                thought, problem=f"You did not call a tool. Call tools, or `{FINISH}` with the outputs."
            )
        return Turn(thought, calls)

    def history(
        self, completion: Completion, reply: Turn, records: Sequence[CallRecord], problem: str | None = None
    ) -> list[Message]:
        if not reply.calls:
            return [
                {"role": "assistant", "content": completion.text or "(no reply)"},
                {"role": "user", "content": problem or reply.problem or ""},
            ]
        assistant: Message = {
            "role": "assistant",
            "content": completion.text or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _arguments_json(c.arguments)},
                }
                for c in reply.calls
            ],
        }
        results: list[Message] = [
            {"role": "tool", "tool_call_id": r.call_id, "name": r.tool, "content": r.result.for_llm}
            for r in records
        ]
        # tool messages carry text only on most APIs: the images follow in one user message
        images = _image_parts(records) if self.images else []
        if images:
            results.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Images from the tool results:"}, *images],
                }
            )
        return [assistant, *results]


class TextProtocol:
    """Tool calls written as JSON text (see the module docstring)."""

    native = False

    def __init__(self, images: bool = True) -> None:
        self.images = images

    def request_kwargs(self, signature: object, tools: Sequence[Tool]) -> dict[str, Any]:
        return {}

    def read(self, completion: Completion, step: int) -> Turn:
        from pydantic import ValidationError

        from sigform.adapters.extract_json import find_json_object
        from sigform.types import ToolCalls

        text = completion.text or ""
        found = find_json_object(text, ["thought", "tool_calls"])
        if "tool_calls" not in found.values:
            why = f" ({found.problem})" if found.problem else ""
            return Turn(
                text,
                problem=f"Your reply could not be read{why}: it must be one JSON object with `thought` and "
                f"`tool_calls`. Call `{FINISH}` to give the final answer.",
            )
        thought = found.values.get("thought")
        thought = thought if isinstance(thought, str) else ("" if thought is None else json.dumps(thought))
        try:
            calls = ToolCalls.model_validate(found.values["tool_calls"])
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return Turn(
                thought, problem=f"Your `tool_calls` could not be read ({where}: {first.get('msg')})."
            )
        if not calls.tool_calls:
            return Turn(
                thought, problem=f"You did not call a tool. Call tools, or `{FINISH}` with the outputs."
            )
        return Turn(thought, _ids([(c.name, dict(c.args), c.id) for c in calls.tool_calls], step))

    def history(
        self, completion: Completion, reply: Turn, records: Sequence[CallRecord], problem: str | None = None
    ) -> list[Message]:
        messages: list[Message] = [{"role": "assistant", "content": completion.text or "(no reply)"}]
        if not reply.calls:
            messages.append({"role": "user", "content": problem or reply.problem or ""})
            return messages
        lines = ["Tool results:"]
        for r in records:
            lines.append(f"[{r.call_id}] {r.tool} -> {r.result.status}:\n{r.result.for_llm}")
        text = "\n\n".join(lines)
        images = _image_parts(records) if self.images else []
        messages.append(
            {"role": "user", "content": [{"type": "text", "text": text}, *images] if images else text}
        )
        return messages


def _image_parts(records: Sequence[CallRecord]) -> list[dict[str, object]]:
    """The image content parts of the results, in call order (``[image N ...]`` in their text)."""
    return [part for r in records for image in r.result.images for part in image.to_content_parts()]
