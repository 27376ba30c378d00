"""Compact JSON schemas for prompts and for strict structured outputs.

:func:`json_schema` asks pydantic for the schema, then makes it compact: titles dropped,
``$defs`` inlined (only recursive types keep a ``$defs`` entry and a ``$ref``), ``type`` first.
Properties stay in declaration order and constraints (``minimum``, ``maxLength``,
``pattern``...) are kept. Schemas are built once per annotation and cached; callers get a copy.

:func:`strict_json_schema` shapes an object schema for OpenAI-style strict structured
outputs: every object closed (``additionalProperties: false``) with all properties required
(optional ones nullable). Strict mode cannot express an open ``dict[K, V]``, so such a dict is
asked for as an **array of ``{"key": k, "value": v}`` objects**; :func:`~sigform.types.coercion`
reads that form back into a dict. Fixed tuples become arrays whose items may be any of the
member types (length and order are still enforced by coerce); keywords strict mode rejects are
dropped (coerce still enforces them).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from typing import Any

from sigform.jsonvalue import JSON, JSONObject, json_array, json_object
from sigform.probes import probe
from sigform.types.inspection import cache_key, split_optional, strip_annotated

__all__ = ["json_schema", "strict_json_schema"]

_CACHE: dict[object, tuple[JSONObject, object]] = {}
_LOCK = threading.Lock()
_MAX_CACHE = 4096  # keyed by annotations, which programs may build per call (Literal of user values)
_DATA_KEYWORDS = frozenset({"default", "enum", "const", "examples"})  # values here are data, not schemas
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_FIRST = ("type", "description", "enum", "const", "properties", "required", "items", "additionalProperties")
_STRICT_DROP = frozenset(
    {
        "default",
        "uniqueItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "examples",
        "discriminator",
        "propertyNames",
        "title",
        "readOnly",
        "writeOnly",
        "deprecated",
        "prefixItems",
    }
)


def json_schema(annotation: object) -> JSONObject:
    """The compact JSON schema of ``annotation`` (a fresh copy of the cached schema)."""
    key = cache_key(annotation)
    hit = _CACHE.get(key)
    if hit is None:
        schema = _build(annotation)
        with _LOCK:
            if len(_CACHE) >= _MAX_CACHE:
                _CACHE.clear()
            # the annotation keeps id()-keys valid; the entry is read here, not after the lock
            # (another thread may clear the cache in between)
            hit = _CACHE.setdefault(key, (schema, annotation))
    return copy.deepcopy(hit[0])


def take_defs(schema: JSONObject) -> JSONObject:
    """The ``$defs`` of ``schema`` (``{}`` when it has none), removed from it."""
    return json_object(schema.pop("$defs", None), "$defs")


def _build(annotation: Any) -> JSONObject:  # Any: handed to pydantic's TypeAdapter
    from pydantic import TypeAdapter

    raw = probe(f"JSON schema of {annotation!r}", TypeAdapter(annotation).json_schema, None)
    if raw is None:  # a type pydantic cannot describe: say only what it is called
        from sigform.types.names import type_name

        return {"description": type_name(annotation)}
    return _compact(raw)


def _compact(schema: JSONObject) -> JSONObject:
    defs = take_defs(schema)
    recursive = _recursive_defs(defs)
    needed: dict[str, object] = {}

    def walk(node: JSON, stack: tuple[str, ...]) -> JSON:
        if isinstance(node, list):
            return [walk(v, stack) for v in node]
        return walk_object(node, stack) if isinstance(node, dict) else node

    def walk_object(node: JSONObject, stack: tuple[str, ...]) -> JSONObject:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if name in defs and name not in recursive and name not in stack:
                inlined = walk_object(json_object(defs[name], name), (*stack, name))
                extra = {k: walk(v, stack) for k, v in node.items() if k != "$ref" and k != "title"}
                return _order({**inlined, **extra})
            needed.setdefault(name, None)
        out: JSONObject = {}
        for k, v in node.items():
            if k == "title":
                continue
            if k in _DATA_KEYWORDS:
                out[k] = v
            elif k in _SCHEMA_MAPS and isinstance(v, dict):
                out[k] = {pk: walk(pv, stack) for pk, pv in v.items()}
            else:
                out[k] = walk(v, stack)
        return _order(out)

    result = walk_object(schema, ())
    done: JSONObject = {}
    while len(done) < len(needed):
        for name in list(needed):
            if name not in done:
                done[name] = walk_object(json_object(defs[name], name), (name,))
    if done:
        result["$defs"] = done
    return result


def _refs(node: object) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    out = set().union(*(_refs(v) for k, v in node.items() if k not in _DATA_KEYWORDS)) if node else set()
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out.add(ref[len("#/$defs/") :])
    return out


def _recursive_defs(defs: JSONObject) -> set[str]:
    """Names of definitions that reach themselves through references (they must stay $refs)."""
    direct = {name: _refs(d) for name, d in defs.items()}
    out = set()
    for name in defs:
        seen: set[str] = set()
        todo = list(direct[name])
        while todo:
            n = todo.pop()
            if n == name:
                out.add(name)
                break
            if n not in seen and n in direct:
                seen.add(n)
                todo.extend(direct[n])
    return out


def _order(node: JSONObject) -> JSONObject:
    out = {k: node[k] for k in _FIRST if k in node}
    out.update((k, v) for k, v in node.items() if k not in out)
    return out


def strict_json_schema(fields: Mapping[str, object]) -> JSONObject:
    """An object schema over output ``fields`` ({name: annotation}) valid for strict mode.

    Every object is closed and lists all its properties as required; optional properties are
    nullable; open ``dict[K, V]`` fields are arrays of ``{"key", "value"}`` objects (coerce
    reads them back into dicts). Properties follow the order of ``fields``.
    """
    defs: JSONObject = {}
    props: JSONObject = {}
    for name, annotation in fields.items():
        schema = json_schema(annotation)
        defs.update(take_defs(schema))
        strict = _strict_object(schema)
        _, nullable = split_optional(strip_annotated(annotation)[0])
        props[name] = _nullable(strict) if nullable else strict
    result: JSONObject = {
        "type": "object",
        "properties": props,
        "required": [*props],
        "additionalProperties": False,
    }
    if defs:
        result["$defs"] = {k: _strict(v) for k, v in defs.items()}
    return result


_ANY_JSON: JSONObject = {
    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
}


def _nullable(schema: JSONObject) -> JSONObject:
    variants = json_array(schema["anyOf"], "anyOf") if "anyOf" in schema else [schema]
    if any(json_object(v, "anyOf").get("type") == "null" for v in variants):
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _strict(node: JSON) -> JSON:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return _strict_object(node) if isinstance(node, dict) else node


def _strict_object(node: JSONObject) -> JSONObject:
    if not node or set(node) <= {"description"}:
        return {**copy.deepcopy(_ANY_JSON), **node}  # any value: strict mode needs a concrete type
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _strict_object({**json_object(all_of[0], "allOf"), **rest})
    out = {k: v for k, v in node.items() if k not in _STRICT_DROP}
    if "prefixItems" in node:
        members: list[JSON] = []
        for m in json_array(node["prefixItems"], "prefixItems"):
            if m not in members:
                members.append(m)
        out["items"] = members[0] if len(members) == 1 else {"anyOf": members}
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and "properties" not in node:
        # an open dict: strict mode cannot say "any keys", so ask for [{key, value}, ...]
        value = node.get("additionalProperties")
        value_schema = _strict_object(value) if isinstance(value, dict) else copy.deepcopy(_ANY_JSON)
        keys = json_object(node.get("propertyNames", {"type": "string"}), "propertyNames")
        pair: JSONObject = {
            "type": "object",
            "properties": {
                "key": _strict_object({**keys, "type": keys.get("type", "string")}),
                "value": value_schema,
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        }
        array: JSONObject = {"type": "array", "items": pair}
        if "description" in node:
            array["description"] = node["description"]
        return array
    for k, v in list(out.items()):
        if k in _DATA_KEYWORDS:
            continue
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {pk: _strict(pv) for pk, pv in v.items()}
        elif isinstance(v, (dict, list)):
            out[k] = _strict(v)
    if is_object:
        required = set(json_array(node.get("required"), "required"))
        props = json_object(out["properties"], "properties")
        out["properties"] = {
            k: (v if k in required else _nullable(json_object(v, k))) for k, v in props.items()
        }
        out["required"] = [*props]
        out["additionalProperties"] = False
    return out
