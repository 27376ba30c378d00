"""ToolCalls: the type of an output field holding the tool calls a model decided to make."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from sigform.errors import FieldError, FieldValueError
from sigform.excerpt import shorten
from sigform.lm.interface import ToolCall

__all__ = ["ToolCalls"]

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def _decode_args(args: object, name: object) -> object:
    """JSON-object text -> dict; anything else is returned for pydantic to judge."""
    if not isinstance(args, str):
        return args
    try:
        decoded = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments of tool {name!r} are not valid JSON ({exc.msg}): {shorten(args, 120)}"
        ) from exc
    if not isinstance(decoded, dict):
        raise ValueError(f"arguments of tool {name!r} must be a JSON object, got {shorten(args, 120)}")
    return decoded


def _no_docstring(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Keep class docstrings (written for people) out of schemas shown to models."""
    schema.pop("description", None)


def _call_schema_extra(schema: dict[str, Any], model: type[BaseModel]) -> None:
    _no_docstring(schema, model)
    schema["required"] = ["name", "args"]  # a model should always write args, even if empty


class ToolCalls(BaseModel):
    """Tool calls a model asked for, as an output field value
    (``calls: sf.ToolCalls = sf.OutputField()``).

    Filled from native function calling with :meth:`from_completion_calls`, or validated from
    text the model wrote: ``{"tool_calls": [{"name": ..., "args": {...}}]}``, a bare list of
    calls, ``"arguments"`` for ``"args"``, arguments as a JSON string, and the OpenAI
    ``{"function": {...}}`` shape are all accepted; invalid argument JSON is an error, never
    guessed at. :meth:`prompt_schema` gives the JSON schema to show a model when tools are
    described in the prompt instead of passed natively.
    """

    class Call(BaseModel):
        """One tool call: the tool's ``name``, its ``args`` (a JSON object) and the provider's call
        ``id`` when the call came from native function calling."""

        model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=_call_schema_extra)

        name: str = Field(min_length=1, description="name of the tool to call")
        args: dict[str, Any] = Field(
            default_factory=dict,
            validation_alias=AliasChoices("args", "arguments"),
            description="arguments of the call, as a JSON object",
        )
        id: SkipJsonSchema[str | None] = None  # set by providers; models never write it

        @model_validator(mode="before")
        @classmethod
        def _accept_shapes(cls, value: object) -> object:
            if not isinstance(value, Mapping):
                return value
            fields = dict(value)
            fn = fields.pop("function", None)  # OpenAI message shape {"id", "type", "function": {...}}
            if isinstance(fn, Mapping):
                fields.pop("type", None)
                fields.setdefault("name", fn.get("name"))
                fields.setdefault("arguments", fn.get("arguments", "{}"))
            for key in ("args", "arguments"):
                if key in fields:
                    fields[key] = _decode_args(fields[key], fields.get("name"))
            return fields

        def to_tool_call(self) -> ToolCall:
            """This call as a :class:`sigform.lm.interface.ToolCall`."""
            return ToolCall(name=self.name, arguments=dict(self.args), id=self.id)

        def __repr__(self) -> str:
            ident = "" if self.id is None else f", id={self.id!r}"
            return f"ToolCalls.Call({self.name!r}, {shorten(self.args, 120)}{ident})"

    model_config = ConfigDict(extra="forbid", json_schema_extra=_no_docstring)

    tool_calls: list[Call] = Field(default_factory=list, description="the tool calls to make, in order")

    @model_validator(mode="before")
    @classmethod
    def _accept_list(cls, value: object) -> object:
        if isinstance(value, (list, tuple)):
            return {"tool_calls": list(value)}
        return value

    @classmethod
    def from_completion_calls(cls, calls: Iterable[ToolCall]) -> ToolCalls:
        """From the tool calls of a :class:`~sigform.lm.interface.Completion`. Arguments the
        provider sent as invalid JSON raise :class:`~sigform.errors.FieldValueError`."""
        out: list[ToolCalls.Call] = []
        errors: list[FieldError] = []
        for call in calls:
            try:
                args = _decode_args(call.arguments, call.name)
                if not isinstance(args, Mapping):
                    raise ValueError(f"arguments of tool {call.name!r} must be a JSON object")
            except ValueError as exc:
                errors.append(
                    FieldError(
                        field="tool_calls",
                        expected=f"a JSON object of arguments for tool {call.name!r}",
                        seen=shorten(call.arguments, 120),
                        message=str(exc),
                    )
                )
                continue
            out.append(cls.Call(name=call.name, args=dict(args), id=call.id))
        if errors:
            raise FieldValueError("the model's tool calls have invalid arguments", errors=errors)
        return cls(tool_calls=out)

    def to_tool_calls(self) -> list[ToolCall]:
        """The calls as :class:`sigform.lm.interface.ToolCall` values."""
        return [c.to_tool_call() for c in self.tool_calls]

    @classmethod
    def prompt_schema(
        cls, tools: Mapping[str, Mapping[str, object]] | Iterable[str] | None = None
    ) -> dict[str, Any]:
        """A compact JSON schema (no ``$defs``) of ``{"tool_calls": [{"name", "args"}]}`` to put in
        a prompt. ``tools`` narrows it: tool names (``name`` becomes an enum) or a mapping of
        tool name to its arguments' JSON schema (one alternative per tool)."""
        call: dict[str, object]
        generic_args: dict[str, object] = {"type": "object", "description": "arguments of the call"}
        if tools is None:
            call = _call_schema({"type": "string", "description": "name of the tool to call"}, generic_args)
        elif isinstance(tools, Mapping):
            alternatives = [_call_schema({"const": name}, dict(schema)) for name, schema in tools.items()]
            call = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
        else:
            names = list(tools)
            call = _call_schema({"type": "string", "enum": names}, generic_args)
        return {
            "type": "object",
            "properties": {"tool_calls": {"type": "array", "items": call}},
            "required": ["tool_calls"],
            "additionalProperties": False,
        }

    @classmethod
    def __sigform_coerce__(cls, value: object) -> ToolCalls:
        """Value-engine hook: JSON text (optionally in a code fence), a list of calls or a dict.
        Text that is not JSON is an error, not an empty list."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            text = _FENCE.sub("", value.strip()).strip()
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"tool calls must be JSON ({exc.msg}); got {shorten(value, 120)}") from exc
        return cls.model_validate(value)

    def __len__(self) -> int:
        return len(self.tool_calls)

    def __repr__(self) -> str:
        return f"ToolCalls({self.tool_calls!r})"


def _call_schema(name: Mapping[str, object], args: Mapping[str, object]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {"name": name, "args": args},
        "required": ["name", "args"],
        "additionalProperties": False,
    }
