"""type_name and the safe resolve_type_name."""

from __future__ import annotations

import datetime as dt
import enum
import typing
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

from sigform.errors import SignatureError
from sigform.types import resolve_type_name, type_name


class Book(BaseModel):
    title: str


class Color(enum.Enum):
    RED = "red"


NS = {"Book": Book, "Color": Color}


@pytest.mark.parametrize(
    ("annotation", "name"),
    [
        (str, "str"),
        (list[Book], "list[Book]"),
        (Optional[int], "Optional[int]"),
        (Literal["a", "b"], "Literal['a', 'b']"),
        (dict[str, list[int]], "dict[str, list[int]]"),
        (Union[int, str], "Union[int, str]"),
        (Color, "Color"),
        (tuple[int, ...], "tuple[int, ...]"),
        (typing.List[int], "list[int]"),  # noqa: UP006
        (Annotated[int, Field(ge=0)], "int"),
        (None, "None"),
        (Any, "Any"),
        (dt.date, "date"),
        (int | None, "Optional[int]"),
    ],
)
def test_type_name(annotation: Any, name: str) -> None:
    assert type_name(annotation) == name


@pytest.mark.parametrize(
    "text",
    [
        "str",
        "list[Book]",
        "Optional[int]",
        "Literal['a', 'b']",
        "dict[str, list[int]]",
        "Union[int, str]",
        "Color",
        "tuple[int, ...]",
        "Literal[1, -2, True, None]",
        "date",
        "set[float]",
        "Any",
    ],
)
def test_resolve_round_trips_with_type_name(text: str) -> None:
    annotation = resolve_type_name(text, NS)
    assert resolve_type_name(type_name(annotation), NS) == annotation


def test_resolve_variants() -> None:
    assert resolve_type_name("int | None", NS) == Optional[int]
    assert resolve_type_name("List[Book]", NS) == typing.List[Book]  # noqa: UP006
    assert resolve_type_name("typing.Optional[str]", NS) == Optional[str]
    assert resolve_type_name("datetime.date", NS) is dt.date
    assert resolve_type_name("list['Book']", NS) == list[Book]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Unknown", "'Unknown'"),
        ("list[Nope]", "'Nope'"),
        ("__import__('os')", "unsupported"),
        ("Book.__class__", "private"),
        ("int(", "cannot read"),
        ("Literal[len]", "Literal"),
        ("1 + 2", "unsupported"),
    ],
)
def test_resolve_is_safe_and_names_the_problem(text: str, needle: str) -> None:
    with pytest.raises(SignatureError) as info:
        resolve_type_name(text, NS)
    assert needle in str(info.value)
