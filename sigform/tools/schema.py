"""A tool's arguments: a pydantic model built from a function's signature, its JSON schema for the
LM, and validation of what the LM sent.

Type hints give the argument types (``Annotated[int, Field(ge=0)]`` constraints included), defaults
make arguments optional, and a Google/NumPy-style ``Args:`` section of the docstring gives each
argument's description. Unknown arguments are refused (``extra="forbid"``), so a typo by the LM is
reported back to it instead of being silently dropped.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import typing
import weakref
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from sigform import jsonvalue
from sigform.errors import FieldError, ToolArgumentsError, ToolError
from sigform.excerpt import shorten
from sigform.probes import probe

__all__ = [
    "args_model_from_function",
    "decode_arguments",
    "describe_function",
    "parameters_schema",
    "validate_arguments",
]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:?\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(
    r"^\s*(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|Attributes)\s*:?\s*$", re.IGNORECASE
)
_ARG_LINE = re.compile(r"^\s*\**(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")


def describe_function(func: Callable[..., object]) -> tuple[str, dict[str, str]]:
    """Split a docstring into the tool description and per-argument descriptions."""
    doc = inspect.getdoc(func) or ""
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    base_indent: int | None = None  # indentation of argument names inside the Args section
    state = "summary"
    for line in doc.splitlines():
        if _SECTION.match(line):
            state, current, base_indent = "args", None, None
            continue
        if _OTHER_SECTION.match(line):
            state = "other"
            continue
        if state == "summary":
            summary.append(line)
            continue
        if state != "args" or _NUMPY_RULE.match(line) or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line)
        if match and (base_indent is None or indent <= base_indent):
            base_indent = indent
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def _type_hints(func: Callable[..., object]) -> dict[str, object]:
    name = getattr(func, "__name__", repr(func))
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        first_error = exc
    # The return annotation is never needed; a local class named there must not break the tool.
    raw = dict(getattr(func, "__annotations__", None) or {})
    raw.pop("return", None)
    globalns = getattr(inspect.unwrap(func), "__globals__", None)
    try:
        return typing.get_type_hints(SimpleNamespace(__annotations__=raw), globalns, include_extras=True)
    except Exception as exc:
        raise ToolError(f"tool function {name}: cannot resolve its type hints: {first_error}") from exc


def args_model_from_function(func: Callable[..., object], model_name: str) -> type[BaseModel]:
    """The pydantic model of ``func``'s parameters (``*args``/``**kwargs`` are refused)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolError(f"cannot read the signature of tool function {func!r}: {exc}") from exc
    hints = _type_hints(func)
    _, docs = describe_function(func)
    fields: dict[str, Any] = {}
    for name, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(
                f"tool function {model_name}: parameter {param}: *args/**kwargs cannot be described to "
                "an LM; declare each argument (or pass args=SomeModel)"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolError(
                f"tool function {model_name}: positional-only parameter {name!r} is not supported"
            )
        annotation = hints.get(name, Any)
        default = ... if param.default is param.empty else param.default
        description = docs.get(name)
        fields[name] = (annotation, Field(default, description=description) if description else default)
    try:
        return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    except Exception as exc:
        raise ToolError(f"tool function {model_name}: its parameters cannot form a schema: {exc}") from exc


_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, object]] = weakref.WeakKeyDictionary()


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of the arguments object, as function-calling APIs expect it (a fresh copy:
    building it costs milliseconds, so it is made once per model)."""
    cached = _SCHEMAS.get(model)
    if cached is None:
        cached = _SCHEMAS[model] = _parameters_schema(model)
    return copy.deepcopy(cached)


def _parameters_schema(model: type[BaseModel]) -> dict[str, object]:
    try:
        schema = model.model_json_schema()
    except Exception as exc:
        raise ToolError(f"arguments of {model.__name__} have no JSON schema: {exc}") from exc
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)  # pydantic's auto titles repeat the name and cost tokens
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return schema


def _error_items(model: type[BaseModel], exc: ValidationError) -> list[FieldError]:
    from sigform.types.names import type_name

    fields = model.model_fields
    items: list[FieldError] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        kind = err.get("type", "")
        top = fields.get(str(err["loc"][0])) if err.get("loc") else None
        if kind == "extra_forbidden":
            expected = f"no such argument; arguments are {', '.join(fields) or 'none'}"
        elif top is not None and len(err.get("loc", ())) == 1:
            expected = _safe_type_name(type_name, top.annotation)
        else:
            expected = kind.replace("_", " ")
        seen = "nothing" if kind == "missing" else shorten(err.get("input"), 80)
        items.append(FieldError(field=loc, expected=expected, seen=seen, message=err.get("msg", "invalid")))
    return items


def _safe_type_name(type_name: Callable[[object], str], annotation: object) -> str:
    return probe("type name", lambda: type_name(annotation), repr(annotation))


def decode_arguments(tool: str, arguments: Mapping[str, object] | str | None) -> dict[str, Any]:
    """The LM's arguments as a dict: a JSON object string is decoded, nothing is ``{}``; anything
    else raises :class:`ToolArgumentsError`."""
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = jsonvalue.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"arguments for tool `{tool}` are not valid JSON ({exc.msg} at position {exc.pos}): "
                f"{shorten(arguments, 200)}",
                tool=tool,
            ) from exc
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(
            f"arguments for tool `{tool}` must be a JSON object, got {type(arguments).__name__}: "
            f"{shorten(arguments, 200)}",
            tool=tool,
        )
    return dict(arguments)


def validate_arguments(
    tool: str, model: type[BaseModel], arguments: Mapping[str, object] | str | None
) -> dict[str, Any]:
    """Validate the LM's arguments (a decoded object or the raw JSON string) against ``model``.

    Returns the validated values by argument name (nested models stay model instances). Raises
    :class:`ToolArgumentsError` naming every bad argument.
    """
    arguments = decode_arguments(tool, arguments)
    try:
        validated = model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolArgumentsError(
            f"invalid arguments for tool `{tool}`", tool=tool, errors=_error_items(model, exc)
        ) from exc
    return {name: getattr(validated, name) for name in type(validated).model_fields}
