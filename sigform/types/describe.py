"""What a value of a type looks like, for the prompt.

:func:`describe_type` returns a :class:`TypeDescription` (kind, allowed choices, compact JSON
schema, human constraint texts); adapters word their hints from it in their own templates.
:func:`type_hint` is a default English wording of it (``None`` for plain ``str``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sigform.types.inspection import (
    is_enum_type,
    literal_values,
    origin_of,
    split_optional,
    strip_annotated,
)
from sigform.types.names import type_name
from sigform.types.render import render_value
from sigform.types.schema import json_schema

__all__ = ["TypeDescription", "constraint_texts", "describe_type", "type_hint"]


@dataclass(frozen=True)
class TypeDescription:
    """How to ask for a value of one type.

    ``kind`` is one of ``str``, ``bool``, ``int``, ``float``, ``choices`` (Literal/Enum; see
    ``choices``), ``json`` (anything structured; see ``schema``), ``date``, ``datetime``,
    ``time``, ``none``, ``any`` or ``custom`` (a type with its own ``__sigform_describe__``).
    ``optional`` says ``None`` is also allowed. ``constraints`` are short human texts such as
    ``">= 0"``, ``"at most 5 items"``, ``"matches ^[A-Z]+$"``. ``hint`` is a custom type's own
    wording for the prompt (``None``: the type needs none, e.g. media sent as content parts).
    """

    kind: str
    name: str
    optional: bool = False
    choices: tuple[str, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    constraints: tuple[str, ...] = ()
    hint: str | None = None


def describe_type(annotation: object) -> TypeDescription:
    """Describe ``annotation`` for a prompt. The schema is a fresh copy (built once, cached)."""
    return _describe(annotation)


_SIMPLE = {
    str: "str",
    bool: "bool",
    int: "int",
    float: "float",
    dt.datetime: "datetime",
    dt.date: "date",
    dt.time: "time",
}


def _describe(annotation: object) -> TypeDescription:
    name = type_name(annotation)
    base, metadata = strip_annotated(annotation)
    base, optional = split_optional(base)
    inner, more = strip_annotated(base)
    metadata += more
    hook = getattr(inner, "__sigform_describe__", None)
    if hook is not None and isinstance(inner, type):
        described: TypeDescription = hook()
        if optional and not described.optional:  # Optional[Image]: the hook describes Image only
            described = dataclasses.replace(described, optional=True)
        return described
    constraints = tuple(constraint_texts(metadata, inner))
    if inner is None or inner is type(None):
        return TypeDescription("none", name, optional=True)
    if inner is Any or inner is object:
        return TypeDescription("any", name, optional=optional)
    if isinstance(inner, type) and inner in _SIMPLE:
        return TypeDescription(_SIMPLE[inner], name, optional=optional, constraints=constraints)
    if is_enum_type(inner):
        return TypeDescription(
            "choices",
            name,
            optional,
            tuple(render_value(m.value) for m in inner),
            json_schema(inner),
            constraints,
        )
    if origin_of(inner) is Literal:
        values = literal_values(inner)
        if None in values:
            optional, values = True, tuple(v for v in values if v is not None)
        return TypeDescription(
            "choices", name, optional, tuple(render_value(v) for v in values), None, constraints
        )
    return TypeDescription("json", name, optional, (), json_schema(annotation), constraints)


def constraint_texts(metadata: tuple[object, ...], base: object) -> list[str]:
    """Human texts for constraint metadata (annotated_types objects or pydantic ``FieldInfo``)."""
    out: list[str] = []
    unit = "characters" if base is str else "items"
    for meta in metadata:
        nested = getattr(meta, "metadata", None)
        if isinstance(nested, list) and type(meta).__name__ == "FieldInfo":
            out.extend(constraint_texts(tuple(nested), base))
            continue
        for attr, text in (
            ("gt", "> {}"),
            ("ge", ">= {}"),
            ("lt", "< {}"),
            ("le", "<= {}"),
            ("multiple_of", "a multiple of {}"),
            ("min_length", "at least {} " + unit),
            ("max_length", "at most {} " + unit),
            ("pattern", "matches {}"),
            ("max_digits", "at most {} digits"),
            ("decimal_places", "at most {} decimals"),
        ):
            value = getattr(meta, attr, None)
            if value is not None and not callable(value):
                out.append(text.format(value.pattern if isinstance(value, re.Pattern) else value))
    return out


def type_hint(annotation: object) -> str | None:
    """A default English hint for the prompt: ``"True or False"``, ``"one of: ..."``, ...

    ``None`` for plain ``str`` (nothing needs saying), ``Any``, and custom types (``Image``,
    ``History``, ...) that neither word their own hint nor have a schema.
    """
    d = describe_type(annotation)
    if d.kind == "str" and not d.optional and not d.constraints:
        return None
    if d.kind == "any":
        return None
    if d.kind == "custom" and d.hint is None and d.schema is None:
        return None
    if d.kind == "none":
        return "None"
    text = {
        "str": "text",
        "bool": "True or False",
        "int": "a single int value",
        "float": "a single float value",
        "date": "a date as YYYY-MM-DD",
        "datetime": "an ISO 8601 datetime (YYYY-MM-DDTHH:MM:SS)",
        "time": "a time as HH:MM:SS",
    }.get(d.kind)
    if d.kind == "custom" and d.hint is not None:
        text = d.hint
    elif d.kind == "choices":
        quoted = [c if _plain_number(c) else json.dumps(c, ensure_ascii=False) for c in d.choices]
        text = "one of: " + ", ".join(quoted)
    elif text is None:
        text = "JSON matching this schema: " + json.dumps(d.schema, ensure_ascii=False, separators=(",", ":"))
    if d.constraints:
        text += f" ({', '.join(d.constraints)})"
    if d.optional:
        text += ", or None"
    return text


def _plain_number(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", text))
