"""A compact, TypeScript-like picture of a type for prompts (instead of raw JSON schema).

``list[str]`` is ``string[]``, ``Optional[int]`` is ``integer | null``, a Literal is
``"USD" | "EUR"``, a date is ``string (YYYY-MM-DD)`` and a model is ``{name: string, city:
string}``; field descriptions and constraints become ``//`` comments, which puts the object on
several lines. It is drawn from the type's JSON schema, so everything that has a schema (custom
pydantic types, enums, nested models) has a shape. A raw JSON schema says the same in about
twice the tokens, which small models pay for on every call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sigform.jsonvalue import json_object
from sigform.types.schema import json_schema, take_defs

__all__ = ["object_shape", "schema_shape", "type_shape"]

_FORMATS = {
    "date": "string (YYYY-MM-DD)",
    "date-time": "string (YYYY-MM-DDTHH:MM:SS)",
    "time": "string (HH:MM:SS)",
}
_SIMPLE = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "null": "null"}
_LIMITS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("multipleOf", "a multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)
_MAX_DEPTH = 8


def type_shape(annotation: object) -> str:
    """The shape of ``annotation`` (see the module docstring)."""
    schema = json_schema(annotation)
    return schema_shape(schema, json_object(schema.get("$defs"), "$defs"))


def object_shape(fields: Sequence[tuple[str, object, str]]) -> str:
    """The shape of an object with ``fields`` given as ``(name, annotation, description)``."""
    defs: dict[str, object] = {}
    props: dict[str, object] = {}
    for name, annotation, desc in fields:
        schema = json_schema(annotation)
        defs.update(take_defs(schema))
        if desc and "description" not in schema:
            schema["description"] = desc
        props[name] = schema
    return schema_shape({"type": "object", "properties": props, "required": list(props)}, defs)


def schema_shape(
    schema: Mapping[str, object], defs: Mapping[str, object], indent: str = "", depth: int = 0
) -> str:
    """The shape of a JSON ``schema`` whose ``$ref`` point into ``defs``."""
    if depth > _MAX_DEPTH:
        return "object"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return schema_shape(target, defs, indent, depth + 1) if isinstance(target, Mapping) else "object"
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list) and variants:
            return " | ".join(_wrapped(v, defs, indent, depth) for v in variants)
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in enum)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_SIMPLE.get(k, str(k)) for k in kind)
    if kind == "string":
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt]
        pattern = schema.get("pattern")
        return f"string matching /{pattern}/" if isinstance(pattern, str) else "string"
    if kind == "array":
        items = schema.get("prefixItems")
        if isinstance(items, list):
            return "[" + ", ".join(schema_shape(v, defs, indent, depth + 1) for v in items) + "]"
        item = schema.get("items")
        return (_wrapped(item, defs, indent, depth) if isinstance(item, Mapping) else "any") + "[]"
    if kind == "object" or "properties" in schema:
        return _object(schema, defs, indent, depth)
    if isinstance(kind, str):
        return _SIMPLE.get(kind, kind)
    return "any"


def _wrapped(schema: object, defs: Mapping[str, object], indent: str, depth: int) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    text = schema_shape(schema, defs, indent, depth + 1)
    return f"({text})" if " | " in text and "\n" not in text else text


def _object(schema: Mapping[str, Any], defs: Mapping[str, object], indent: str, depth: int) -> str:
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return "{[key: string]: " + schema_shape(extra, defs, indent, depth + 1) + "}"
        return "object"
    required = set(schema.get("required") or ())
    inner = indent + "  "
    entries: list[tuple[str, str]] = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, Mapping) else {}
        key = name if name.isidentifier() else json.dumps(name, ensure_ascii=False)
        mark = "" if name in required else "?"
        entries.append((f"{key}{mark}: {schema_shape(prop, defs, inner, depth + 1)}", _comment(prop, defs)))
    if not any(comment for _, comment in entries) and all("\n" not in text for text, _ in entries):
        return "{" + ", ".join(text for text, _ in entries) + "}"
    lines = [f"{inner}{text},{f' // {comment}' if comment else ''}" for text, comment in entries]
    return "{\n" + "\n".join(lines) + f"\n{indent}}}"


def _comment(prop: Mapping[str, Any], defs: Mapping[str, object]) -> str:
    notes: list[str] = []
    desc = prop.get("description")
    if isinstance(desc, str) and desc.strip():
        notes.append(" ".join(desc.split()))
    targets = [prop, *(v for v in prop.get("anyOf", ()) if isinstance(v, Mapping))]
    for target in targets:
        for key, text in _LIMITS:
            if key in target:
                notes.append(text.format(target[key]))
    return "; ".join(notes)
