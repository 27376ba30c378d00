"""render_value, describe_type and type_hint."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

from sigform.types import TypeDescription, coerce, describe_type, render_value, type_hint


class Fuel(enum.Enum):
    PETROL = "petrol"
    PLUG_IN_HYBRID = "plug-in hybrid"


class Tier(enum.Enum):
    BRONZE = 10
    GOLD = 30


class Book(BaseModel):
    title: str
    pages: int = Field(ge=1)
    fuel: Optional[Fuel] = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Paris", "Paris"),
        ("two\nlines", "two\nlines"),
        (3, "3"),
        (0.1, "0.1"),
        (True, "True"),
        (None, "None"),
        (Fuel.PLUG_IN_HYBRID, "plug-in hybrid"),
        (Tier.GOLD, "30"),
        (dt.date(2024, 3, 5), "2024-03-05"),
        (["a", "b"], "1. a\n2. b"),
        ([1, 2], "[1, 2]"),
        ({"a": 1}, '{"a": 1}'),
        ([], "[]"),
        (Point(1, 2), '{"x": 1, "y": 2}'),
        ('"quoted"', '"\\"quoted\\""'),
    ],
)
def test_render_plain_values(value: Any, expected: str) -> None:
    assert render_value(value) == expected


def test_render_model_as_compact_json_in_declaration_order() -> None:
    text = render_value(Book(title="Dune", pages=412, fuel=Fuel.PETROL))
    assert "\n" not in text
    assert list(json.loads(text)) == ["title", "pages", "fuel"]
    assert json.loads(text)["fuel"] == "petrol"


def test_render_list_of_awkward_strings_as_json() -> None:
    for items in (["multi\nline"], ["  padded"], [""], ['"q"']):
        assert json.loads(render_value(items)) == items


def test_render_str_in_union_stays_unambiguous() -> None:
    assert render_value("42", Union[int, str]) == '"42"'
    assert render_value("hello", Union[int, str]) == "hello"
    assert render_value("None", Optional[str]) == '"None"'
    assert coerce(render_value("None", Optional[str]), Optional[str]) == "None"


def test_render_uses_custom_hook() -> None:
    class Custom:
        def __sigform_render__(self) -> str:
            return "<custom>"

    assert render_value(Custom()) == "<custom>"


@pytest.mark.parametrize(
    ("annotation", "kind", "choices"),
    [
        (str, "str", ()),
        (bool, "bool", ()),
        (int, "int", ()),
        (float, "float", ()),
        (dt.date, "date", ()),
        (dt.datetime, "datetime", ()),
        (Literal["a", "b"], "choices", ("a", "b")),
        (Literal[1, 2], "choices", ("1", "2")),
        (Fuel, "choices", ("petrol", "plug-in hybrid")),
        (Tier, "choices", ("10", "30")),
        (list[str], "json", ()),
        (Book, "json", ()),
        (dict[str, int], "json", ()),
        (None, "none", ()),
        (Any, "any", ()),
    ],
)
def test_describe_kinds(annotation: Any, kind: str, choices: tuple[str, ...]) -> None:
    d = describe_type(annotation)
    assert isinstance(d, TypeDescription)
    assert (d.kind, d.choices) == (kind, choices)
    assert (d.schema is not None) == (kind == "json" or annotation in (Fuel, Tier))


def test_describe_optional_and_constraints() -> None:
    d = describe_type(Optional[Annotated[int, Field(ge=0, le=5)]])
    assert d.kind == "int" and d.optional and d.constraints == (">= 0", "<= 5")
    assert describe_type(Annotated[list[str], Field(max_length=5)]).constraints == ("at most 5 items",)
    assert describe_type(Annotated[str, Field(pattern="^[A-Z]+$")]).constraints == ("matches ^[A-Z]+$",)
    assert describe_type(Annotated[str, Field(min_length=2)]).constraints == ("at least 2 characters",)


def test_describe_schema_declaration_order_and_constraints() -> None:
    schema = describe_type(Book).schema
    assert schema is not None
    assert list(schema["properties"]) == ["title", "pages", "fuel"]
    assert schema["properties"]["pages"]["minimum"] == 1


def test_type_hints() -> None:
    assert type_hint(str) is None
    assert type_hint(bool) == "True or False"
    assert type_hint(int) == "a single int value"
    assert type_hint(float) == "a single float value"
    assert type_hint(Literal["approve", "reject"]) == 'one of: "approve", "reject"'
    assert type_hint(Tier) == "one of: 10, 30"
    assert type_hint(Optional[int]) == "a single int value, or None"
    assert type_hint(Annotated[int, Field(ge=0)]) == "a single int value (>= 0)"
    hint = type_hint(list[Book])
    assert hint is not None and hint.startswith("JSON matching this schema: ")
    assert '"title"' in hint and hint.index('"title"') < hint.index('"pages"')
