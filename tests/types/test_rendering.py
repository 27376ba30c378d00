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


# ---- custom types: hints, hooks inside containers, media never as base64 -----------------------

_PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _image() -> Any:
    from sigform.types import Image

    return Image.from_bytes(_PNG)


class _Shown:
    """A type that writes itself for prompts (as tools and media do)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __sigform_render__(self) -> str:
        return f"- {self.name}: does {self.name}\n  more lines"

    def __repr__(self) -> str:
        return f"_Shown({self.name!r})"


class Album(BaseModel):
    title: str
    cover: Any


@dataclasses.dataclass
class Page:
    number: int
    scan: Any


def test_type_hint_of_custom_types_has_no_null_schema() -> None:
    from sigform.types import Audio, File, History, Image

    for tp in (Image, Audio, File, History, Optional[Image]):
        assert type_hint(tp) is None, tp
    assert describe_type(Optional[Image]).optional
    assert describe_type(Image).kind == "custom"


def test_custom_type_can_word_its_own_hint() -> None:
    class Money:
        @classmethod
        def __sigform_describe__(cls) -> TypeDescription:
            return TypeDescription("custom", "Money", hint="an amount like 12.50 EUR")

    assert type_hint(Money) == "an amount like 12.50 EUR"
    assert type_hint(Optional[Money]) == "an amount like 12.50 EUR, or None"


def test_list_items_use_their_render_hook() -> None:
    text = render_value([_Shown("add"), _Shown("mul")])
    assert text == "- add: does add\n  more lines\n- mul: does mul\n  more lines"
    assert "_Shown(" not in text
    nested = json.loads(render_value({"tools": [_Shown("add"), 3]}))  # mixed or nested: inside the JSON
    assert nested == {"tools": ["- add: does add\n  more lines", 3]}


def test_media_dumps_keep_their_content_outside_prompts() -> None:
    image = _image()
    assert Album(title="x", cover=image).model_dump()["cover"]["data"] == image.data
    assert '"data"' in Album(title="x", cover=image).model_dump_json()


@pytest.mark.parametrize(
    "value",
    [
        {"a": "x", "pic": None},
        ["x", None],
        Album(title="x", cover=None),
        Page(number=1, scan=None),
    ],
)
def test_nested_media_render_as_the_placeholder(value: Any) -> None:
    import base64

    image = _image()
    if isinstance(value, dict):
        value["pic"] = image
    elif isinstance(value, list):
        value[1] = image
    elif isinstance(value, Album):
        value = Album(title="x", cover=image)
    else:
        value = Page(number=1, scan=image)
    text = render_value(value)
    assert base64.b64encode(_PNG).decode()[:40] not in text and len(text) < 200
    assert str(image) in text  # the short placeholder
    if not isinstance(value, list):
        assert json.dumps(str(image)) in text  # as a JSON string inside one line of valid JSON
        json.loads(text)


def test_nested_hooks_do_not_change_plain_structures() -> None:
    assert render_value({"a": [1, {"b": "c"}]}) == '{"a": [1, {"b": "c"}]}'
    assert render_value(Book(title="t", pages=2)) == '{"title": "t", "pages": 2, "fuel": null}'


def test_iter_media_finds_media_in_models_and_dataclasses() -> None:
    from sigform.types import iter_media

    a, b = _image(), _image()
    value = {"albums": [Album(title="x", cover=a)], "pages": (Page(1, b),), "n": 3, "s": "text"}
    assert list(iter_media(value)) == [a, b]
    assert list(iter_media("text")) == [] and list(iter_media(None)) == []
