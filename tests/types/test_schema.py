"""json_schema and strict_json_schema."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, Field

from sigform.jsonvalue import json_array, json_object
from sigform.types import coerce, json_schema, strict_json_schema
from sigform.types.schema import take_defs


class Inner(BaseModel):
    zeta: float = Field(ge=-90, le=90, description="latitude")
    alpha: str


class Outer(BaseModel):
    """An outer record."""

    name: str
    inner: Optional[Inner] = None
    counts: dict[str, int] = {}
    pair: tuple[int, str] = (1, "a")


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


def _walk(node: Any, visit: Any) -> None:
    if isinstance(node, dict):
        visit(node)
        for v in node.values():
            _walk(v, visit)
    elif isinstance(node, list):
        for v in node:
            _walk(v, visit)


def test_schema_is_compact_ordered_and_keeps_constraints() -> None:
    schema = json_schema(Outer)
    assert list(schema["properties"]) == ["name", "inner", "counts", "pair"]
    assert "$defs" not in schema and "title" not in schema
    inner = schema["properties"]["inner"]["anyOf"][0]
    assert list(inner["properties"]) == ["zeta", "alpha"]  # declaration order, not alphabetical
    assert inner["properties"]["zeta"]["minimum"] == -90
    assert inner["properties"]["zeta"]["description"] == "latitude"
    assert schema["description"] == "An outer record."


def test_schema_property_named_title_is_kept() -> None:
    class Doc(BaseModel):
        title: str

    assert list(json_schema(Doc)["properties"]) == ["title"]


def test_schema_cached_but_callers_get_copies() -> None:
    a = json_schema(Outer)
    a["properties"].clear()
    assert json_schema(Outer)["properties"]
    assert json_schema(Annotated[int, Field(ge=0)]) == {"type": "integer", "minimum": 0}


def test_recursive_schema_keeps_defs() -> None:
    schema = json_schema(Tree)
    assert schema["$ref"] == "#/$defs/Tree"
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}


def test_strict_schema_closes_every_object_and_requires_everything() -> None:
    schema = strict_json_schema({"outer": Outer, "n": Optional[int], "tree": Tree})
    assert list(schema["properties"]) == ["outer", "n", "tree"]
    assert schema["required"] == ["outer", "n", "tree"]
    assert schema["properties"]["n"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}

    def check(node: dict[str, Any]) -> None:
        assert "default" not in node and "prefixItems" not in node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])

    _walk(schema, check)
    counts = schema["properties"]["outer"]["properties"]["counts"]["anyOf"][0]
    assert counts["type"] == "array"
    assert counts["items"]["properties"]["key"] == {"type": "string"}


def test_strict_dict_form_reads_back() -> None:
    data = {"name": "x", "inner": None, "counts": [{"key": "a", "value": 2}], "pair": [3, "b"]}
    assert coerce(data, Outer) == Outer(name="x", counts={"a": 2}, pair=(3, "b"))
    assert coerce({"value": 1, "children": None}, Tree) == Tree(value=1)


def test_json_readers_read_a_part_or_name_what_they_found() -> None:
    assert json_object(None) == {} and json_array(None) == []
    part = {"type": "string"}
    assert json_object(part) is part
    with pytest.raises(TypeError, match=r"\$defs: expected a JSON object, got list"):
        json_object([1], "$defs")
    with pytest.raises(TypeError, match="required: expected a JSON array, got str"):
        json_array("name", "required")


def test_take_defs_removes_a_schemas_defs() -> None:
    schema = json_schema(Tree)
    defs = take_defs(schema)
    assert "Tree" in defs and "$defs" not in schema
    assert take_defs(schema) == {}
