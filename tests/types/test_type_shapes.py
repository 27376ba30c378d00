"""The compact, TypeScript-like type shapes shown in prompts instead of raw JSON schema."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Literal, Optional

from pydantic import BaseModel, Field

import sigform as sf
from sigform.types.shape import object_shape, type_shape


class Venue(BaseModel):
    name: str = Field(description="name of the place")
    city: str


class Event(BaseModel):
    title: str
    date: dt.date
    venue: Venue
    capacity: Optional[int] = None


class Tier(Enum):
    GOLD = "gold"
    SILVER = "silver"


def test_scalars_lists_unions_and_choices() -> None:
    assert type_shape(list[str]) == "string[]"
    assert type_shape(Optional[int]) == "integer | null"
    assert type_shape(list[Optional[int]]) == "(integer | null)[]"
    assert type_shape(Literal["USD", "EUR"]) == '"USD" | "EUR"'
    assert type_shape(Tier) == '"gold" | "silver"'
    assert type_shape(dict[str, float]) == "{[key: string]: number}"
    assert type_shape(tuple[int, str]) == "[integer, string]"
    assert type_shape(dt.date) == "string (YYYY-MM-DD)"


def test_models_nest_and_descriptions_become_comments() -> None:
    assert type_shape(Event) == (
        "{\n"
        "  title: string,\n"
        "  date: string (YYYY-MM-DD),\n"
        "  venue: {\n"
        "    name: string, // name of the place\n"
        "    city: string,\n"
        "  },\n"
        "  capacity?: integer | null,\n"
        "}"
    )


def test_constraints_are_comments_and_plain_models_stay_on_one_line() -> None:
    class Part(BaseModel):
        name: str
        count: int

    class Box(BaseModel):
        size: int = Field(ge=1, le=9)

    assert type_shape(Part) == "{name: string, count: integer}"
    assert type_shape(Box) == "{\n  size: integer, // >= 1; <= 9\n}"


def test_object_shape_of_outputs_with_descriptions() -> None:
    shape = object_shape([("total", float, "amount to pay"), ("when", Optional[dt.date], "")])
    assert shape == "{\n  total: number, // amount to pay\n  when: string (YYYY-MM-DD) | null,\n}"


def test_json_prompt_shows_the_shape_not_the_raw_schema() -> None:
    sig = sf.make_signature("text -> event: Event, tags: list[str]", types={"Event": Event})
    system = sf.JSONAdapter().format(sig, [], {"text": "x"})[0]["content"]
    assert '"properties"' not in system and '"type":' not in system
    assert "tags: string[]" in system and "date: string (YYYY-MM-DD)" in system


def test_chat_hint_for_a_list_is_the_shape() -> None:
    sig = sf.make_signature("text -> tags: list[str]")
    system = sf.ChatAdapter().format(sig, [], {"text": "x"})[0]["content"]
    assert "<JSON: string[]>" in system and "schema" not in system
