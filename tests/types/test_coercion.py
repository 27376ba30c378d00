"""Unit tests of coerce: one test per recovery rule and per refusal rule."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import NotRequired, TypedDict

import sigform.types.coercion as coerce_module
from sigform.errors import FieldValueError, ParseError
from sigform.types import coerce, coerce_fields


@pytest.fixture(autouse=True)
def _surface_internal_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coerce_module, "_RERAISE_INTERNAL", True)


class Tier(enum.Enum):
    BRONZE = 10
    SILVER = 20
    GOLD = 30


class Fuel(enum.Enum):
    PETROL = "petrol"
    PLUG_IN_HYBRID = "plug-in hybrid"


class Severity(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Coordinates(BaseModel):
    lat: float
    lon: float


class Landmark(BaseModel):
    name: str
    location: Coordinates
    opened: Optional[int] = None


class Vehicle(BaseModel):
    make: str
    year: int
    fuel: Fuel


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    full_name: str = Field(alias="fullName")


class Counted(BaseModel):
    count: int = 5
    note: Optional[str] = None


@dataclasses.dataclass
class Point:
    x: int
    tags: list[str]


class Movie(TypedDict):
    title: str
    year: int
    rating: NotRequired[float]


def fails(value: Any, annotation: Any, field: str = "value") -> str:
    with pytest.raises(FieldValueError) as info:
        coerce(value, annotation, field=field)
    (err,) = info.value.errors
    assert err.field == field
    return err.message


# ----------------------------------------------------------------------------- str


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Paris \n", "Paris"),
        ('"Paris"', "Paris"),
        ('"He said \\"hi\\""', 'He said "hi"'),
        ('"a" and "b"', '"a" and "b"'),  # not one JSON string literal: kept as written
        ("line one\nline two", "line one\nline two"),
        ("`code`", "`code`"),  # backticks may be content of a str
        ("", ""),
    ],
)
def test_str_text(raw: str, expected: str) -> None:
    assert coerce(raw, str) == expected


def test_str_from_json_number_and_one_item_list() -> None:
    assert coerce(12345, str) == "12345"
    assert coerce(["Lima"], str) == "Lima"


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2], True, None])
def test_str_refuses_objects_lists_bools_null(value: Any) -> None:
    assert "expected text" in fails(value, str)


def test_str_inside_json_keeps_its_whitespace() -> None:
    assert coerce({"x": 1, "tags": ["  padded "]}, Point).tags == ["  padded "]


# ----------------------------------------------------------------------------- bool


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("False", False),
        ("YES", True),
        ("no", False),
        ("`false`", False),
        ('"TRUE"', True),
        ("Yes.", True),
        (True, True),
        ({"answer": "no"}, False),
        ("is_vegan: yes", True),
    ],
)
def test_bool_words(raw: Any, expected: bool) -> None:
    assert coerce(raw, bool, field="is_vegan") is expected


@pytest.mark.parametrize("raw", ["possibly", "unknown", "sometimes", "", "   ", "yes and no"])
def test_bool_refuses_other_words(raw: str) -> None:
    fails(raw, bool)


def test_bool_refuses_numbers() -> None:
    fails(1, bool)
    fails(0.0, bool)


# ----------------------------------------------------------------------------- int / float


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("42", 42),
        (" -7 ", -7),
        ("1,048,576", 1048576),
        ("312.0", 312),
        (2962.0, 2962),
        ("1e3", 1000),
        ("`12`", 12),
        ('"9"', 9),
        ("42.", 42),
        ({"value": 5}, 5),
        ([3], 3),
        ("headcount: 27", 27),
    ],
)
def test_int_recoveries(raw: Any, expected: int) -> None:
    out = coerce(raw, int, field="headcount")
    assert out == expected and type(out) is int


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("120.5", "whole"),
        (250.75, "whole"),
        (True, "boolean"),
        (False, "boolean"),
        ("True", "number"),
        ("somewhere between 300 and 400", "range"),
        ("2,900-3,100", "range"),
        ("1,000 to 1,200", "range"),
        ("not stated in the text", "number"),
        ("", "empty"),
        ("about 40", "number"),
        ("12,34", "number"),
        ("14 mm", "number"),
        ({"a": 1}, "number"),
        ([1, 2], "number"),
    ],
)
def test_int_refusals(raw: Any, why: str) -> None:
    assert why in fails(raw, int)


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        ("$3.75", "fare_usd", 3.75),
        ("-$45.10", "balance_usd", -45.1),
        ("$18,400", "budget_usd", 18400.0),
        ("8.25%", "tax_percent", 8.25),
        ("87%", "battery_percent", 87.0),
        ("0.031", "p", 0.031),
        (7, "p", 7.0),
        ("1.5e-3", "p", 0.0015),
        ("-0.5", "p", -0.5),
    ],
)
def test_float_recoveries(raw: Any, field: str, expected: float) -> None:
    out = coerce(raw, float, field=field)
    assert out == expected and type(out) is float


def test_currency_unless_the_field_names_another_and_percent_only_on_its_fields() -> None:
    assert coerce("$12.50", float, field="price") == 12.5  # issue 12: any numeric field
    assert "USD" in fails("€12.50", float, field="price_usd")
    assert "_percent" in fails("35%", float, field="rate")
    assert "_percent" in fails("35%", float, field="price_usd")


def test_float_refusals() -> None:
    fails(True, float)
    fails("nan", float)
    fails("1e999", float)
    fails("3.5.1", float)


# ----------------------------------------------------------------------------- None / Optional


@pytest.mark.parametrize("raw", [None, "None", "null", "NULL", " none ", "`null`", ""])
def test_optional_int_none_words(raw: Any) -> None:
    assert coerce(raw, Optional[int]) is None


@pytest.mark.parametrize("raw", ["soon", "ages ago", "long before the war", "n/a?"])
def test_optional_does_not_license_garbage(raw: str) -> None:
    fails(raw, Optional[int])


def test_optional_value_and_pipe_syntax() -> None:
    assert coerce("2019", Optional[int]) == 2019
    assert coerce("null", int | None) is None
    assert coerce("None", Optional[str]) is None


# ----------------------------------------------------------------------------- Literal


VERDICT = Literal["supported", "refuted", "not enough info"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("refuted", "refuted"),
        ("Refuted", "refuted"),
        ("Not Enough Info", "not enough info"),
        ("not_enough_info", "not enough info"),
        ('"supported"', "supported"),
        ("**Refuted**", "refuted"),
        ("refuted.", "refuted"),
        ("Verdict: supported", "supported"),
        ("`refuted`", "refuted"),
    ],
)
def test_literal_recoveries(raw: str, expected: str) -> None:
    assert coerce(raw, VERDICT, field="verdict") == expected


def test_literal_letter_case_and_int_literals() -> None:
    assert coerce("b", Literal["A", "B", "C", "D"]) == "B"
    assert coerce("3", Literal[1, 2, 3]) == 3
    assert coerce('"1"', Literal[1, 2, 3]) == 1
    assert coerce(2.0, Literal[1, 2, 3]) == 2


@pytest.mark.parametrize("raw", ["partially true", "mostly true", "", "I'm unable to rate this review."])
def test_literal_refusals(raw: str) -> None:
    fails(raw, VERDICT)


def test_literal_refuses_out_of_set_and_bool_for_int() -> None:
    assert "not one of" in fails("5", Literal[1, 2, 3])
    fails(True, Literal[1, 2, 3])
    fails("z", Literal["x", "y"])


def test_literal_ambiguous_case_match_is_an_error() -> None:
    assert coerce("Ab", Literal["AB", "ab", "Ab"]) == "Ab"  # exact match wins
    assert "several" in fails("aB", Literal["AB", "ab"])


# ----------------------------------------------------------------------------- Enum


@pytest.mark.parametrize(
    ("raw", "annotation", "expected"),
    [
        ("GOLD", Tier, Tier.GOLD),
        ("Tier.SILVER", Tier, Tier.SILVER),
        ("30", Tier, Tier.GOLD),
        (20, Tier, Tier.SILVER),
        ("gold", Tier, Tier.GOLD),
        ("PLUG_IN_HYBRID", Fuel, Fuel.PLUG_IN_HYBRID),
        ("Plug-in Hybrid", Fuel, Fuel.PLUG_IN_HYBRID),
        ("petrol", Fuel, Fuel.PETROL),
        ("fuel.petrol", Fuel, Fuel.PETROL),
        ('"2"', Severity, Severity.HIGH),
        ("LOW", Severity, Severity.LOW),
        (Fuel.PETROL, Fuel, Fuel.PETROL),
    ],
)
def test_enum_by_value_or_name(raw: Any, annotation: Any, expected: Any) -> None:
    assert coerce(raw, annotation) is expected


@pytest.mark.parametrize("raw", ["2", 2, "PLATINUM", "", True, "Vehicle.GOLD", 20.5])
def test_enum_refusals(raw: Any) -> None:
    fails(raw, Tier)  # "2" is a position, not a value of Tier


# ----------------------------------------------------------------------------- lists, tuples, sets


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('["mushroom", "black olive"]', ["mushroom", "black olive"]),
        ("- headache\n- mild fever", ["headache", "mild fever"]),
        ("* itchy eyes\n* sneezing\n", ["itchy eyes", "sneezing"]),
        ("1) Rinse\n2) Simmer", ["Rinse", "Simmer"]),
        ("1. a\n2. b", ["a", "b"]),
        ("Lyon, Nantes, Lille", ["Lyon", "Nantes", "Lille"]),
        ("#gardening", ["#gardening"]),
        ("The symptoms are:\n- cough\n- chills", ["cough", "chills"]),
        ("red\ngreen", ["red", "green"]),
        ('```json\n["a"]\n```', ["a"]),
        ('{"items": ["a", "b"]}', ["a", "b"]),
        ("[]", []),
    ],
)
def test_list_of_str_forms(raw: str, expected: list[str]) -> None:
    assert coerce(raw, list[str]) == expected


def test_list_of_int_forms() -> None:
    assert coerce(["2", "5", "7"], list[int]) == [2, 5, 7]
    assert coerce("1, 2, 3", list[int]) == [1, 2, 3]
    assert coerce("1,000, 2,500", list[int]) == [1000, 2500]
    assert coerce("- 4\n- 5", list[int]) == [4, 5]


def test_list_refusals() -> None:
    assert "cut off" in fails('["#tidepool", "#sea', list[str])
    assert "cut off" in fails('["Lyon", "Nantes",', list[str])
    assert fails("62.1, DNF", list[float]).startswith("[1]")
    assert "ambiguous" in fails("1,000", list[int])
    fails("", list[str])
    fails("- a\nplain text\n- b", list[str])
    fails({"a": 1}, list[int])


def test_tuple_and_set() -> None:
    assert coerce("[1, 2]", tuple[int, int]) == (1, 2)
    assert coerce("(1, 2)", tuple[int, int]) == (1, 2)
    assert coerce([1, "x"], tuple[int, str]) == (1, "x")
    assert coerce("1, 2, 2", set[int]) == {1, 2}
    assert coerce("[3, 4]", tuple[int, ...]) == (3, 4)
    assert "exactly 2" in fails("[1, 2, 3]", tuple[int, int])
    assert coerce("a, b", frozenset[str]) == frozenset({"a", "b"})


# ----------------------------------------------------------------------------- dicts


def test_dict_forms() -> None:
    assert coerce("Atrium: 80\nLoft: 15", dict[str, int]) == {"Atrium": 80, "Loft": 15}
    assert coerce('{"a": 1}', dict[str, int]) == {"a": 1}
    assert coerce([{"key": "a", "value": "2"}], dict[str, int]) == {"a": 2}  # strict-mode form
    assert coerce({"1": "x"}, dict[int, str]) == {1: "x"}
    assert coerce({"room_capacity": {"A": 1}}, dict[str, int], field="room_capacity") == {"A": 1}
    assert coerce("- **a**: 1\n- b: 2", dict[str, int]) == {"a": 1, "b": 2}


def test_dict_refusals() -> None:
    assert "Aurora" in fails('{"Aurora": "big", "Borealis": 40}', dict[str, int])
    fails("just some prose", dict[str, int])
    fails("a: 1\na: 2", dict[str, int])
    fails('{"a": 1, "b": ', dict[str, int])


# ----------------------------------------------------------------------------- records


def test_model_from_json_with_extra_keys_and_key_case() -> None:
    raw = '{"Name": "Hallgrímskirkja", "Location": {"Lat": 64.1, "LON": "-21.9"}, "extra": 1}'
    out = coerce(raw, Landmark)
    assert out == Landmark(name="Hallgrímskirkja", location=Coordinates(lat=64.1, lon=-21.9), opened=None)


def test_model_from_yaml_lines_and_nested_yaml() -> None:
    assert coerce("make: Toyota\nyear: 2021\nfuel: petrol", Vehicle) == Vehicle(
        make="Toyota", year=2021, fuel=Fuel.PETROL
    )
    nested = "name: Tower\nlocation:\n  lat: 1.5\n  lon: 2\nopened: null"
    assert coerce(nested, Landmark).location == Coordinates(lat=1.5, lon=2.0)
    assert coerce("**Make:** Kia\n**Year:** 2018\n**Fuel:** Petrol", Vehicle).make == "Kia"


def test_model_wrappers_strings_and_fences() -> None:
    expected = Vehicle(make="Kia", year=2022, fuel=Fuel.PETROL)
    assert coerce({"vehicle": {"make": "Kia", "year": 2022, "fuel": "petrol"}}, Vehicle) == expected
    assert coerce('{"make": "Kia", "year": 2022, "fuel": "petrol"}', Vehicle) == expected
    assert (
        coerce('"{\\"make\\": \\"Kia\\", \\"year\\": 2022, \\"fuel\\": \\"petrol\\"}"', Vehicle) == expected
    )
    assert coerce({"v": '{"make": "Kia", "year": 2022, "fuel": "petrol"}'}, Vehicle) == expected
    assert coerce('```json\n{"make": "Kia", "year": 2022, "fuel": "petrol"}\n```', Vehicle) == expected
    assert coerce('Here it is: {"make": "Kia", "year": 2022, "fuel": "petrol"}', Vehicle) == expected
    assert coerce('[{"make": "Kia", "year": 2022, "fuel": "petrol"}]', Vehicle) == expected
    assert coerce('{"make": "Kia", "year": 2022, "fuel": "petrol"', Vehicle) == expected  # only } missing


def test_model_json_damage_repaired() -> None:
    raw = "{'make': 'Kia', year: 2022, // note\n 'fuel': 'petrol',}"
    assert coerce(raw, Vehicle).year == 2022


@pytest.mark.parametrize(
    "raw",
    [
        '{"make": "Seat", "fuel": "petrol"}',
        '{"make": "Seat", "year": "early", "fuel": "petrol"}',
        '{"make": "Seat", "year": 2018, "fuel": "hydrogen"}',
        "a red hatchback",
        '{"make": "Volvo", "year": 20',
        '{"make": "Vol',
        "",
        '{"make": "Seat", "year": true, "fuel": "petrol"}',
    ],
)
def test_model_refusals(raw: str) -> None:
    fails(raw, Vehicle)


def test_model_missing_fields_are_named() -> None:
    assert "year" in fails('{"make": "Seat", "fuel": "petrol"}', Vehicle)


def test_model_null_for_defaulted_field_takes_default() -> None:
    assert coerce({"count": None, "note": None}, Counted) == Counted()


def test_model_alias_and_conflicting_duplicate_keys() -> None:
    assert coerce({"full_name": "Ada"}, Aliased).full_name == "Ada"
    assert coerce({"fullName": "Ada"}, Aliased).full_name == "Ada"
    assert "twice" in fails({"make": "A", "MAKE": "B", "year": 1, "fuel": "petrol"}, Vehicle)


def test_dataclass_and_typeddict() -> None:
    assert coerce({"x": "3", "tags": "a, b", "junk": 1}, Point) == Point(x=3, tags=["a", "b"])
    assert coerce('{"title": "Heat", "year": "1995"}', Movie) == {"title": "Heat", "year": 1995}
    assert coerce({"title": "Heat", "year": 1995, "rating": "8.3"}, Movie)["rating"] == 8.3
    fails({"title": "Heat"}, Movie)


def test_nested_error_path_is_reported() -> None:
    msg = fails({"name": "x", "location": {"lat": "north", "lon": 1}}, Landmark)
    assert msg.startswith("location.lat")


# ----------------------------------------------------------------------------- unions


def test_union_best_fit() -> None:
    assert coerce("42", Union[int, str]) == 42
    assert coerce('"42"', Union[int, str]) == "42"
    assert coerce("hello", Union[int, str]) == "hello"
    assert coerce(42, Union[int, str]) == 42
    assert coerce("3", Union[int, float]) == 3 and type(coerce("3", Union[int, float])) is int
    assert type(coerce("3.5", Union[int, float])) is float
    assert coerce({"lat": 1, "lon": 2}, Union[Coordinates, Vehicle]) == Coordinates(lat=1, lon=2)


def test_union_ambiguity_is_an_error() -> None:
    class A(BaseModel):
        name: str

    class B(BaseModel):
        name: str

    assert "ambiguous" in fails({"name": "x"}, Union[A, B])


def test_union_reports_every_member() -> None:
    msg = fails("maybe", Union[int, bool])
    assert "as int" in msg and "as bool" in msg


# ----------------------------------------------------------------------------- dates, Any, constraints


def test_dates() -> None:
    assert coerce("2024-03-05", dt.date) == dt.date(2024, 3, 5)
    assert coerce("`2024-03-05`", dt.date) == dt.date(2024, 3, 5)
    assert coerce("2024-03-05T10:00:00", dt.datetime) == dt.datetime(2024, 3, 5, 10)
    fails("next Tuesday", dt.date)
    fails(20240305, dt.date)


def test_any_reads_json_text() -> None:
    assert coerce('{"a": [1]}', Any) == {"a": [1]}
    assert coerce("plain", Any) == "plain"
    assert coerce([1], Any) == [1]


def test_constraints_are_enforced() -> None:
    assert coerce("5", Annotated[int, Field(ge=0)]) == 5
    assert "greater than or equal" in fails("-5", Annotated[int, Field(ge=0)])
    fails("a, b, c", Annotated[list[str], Field(max_length=2)])
    fails("abc", Annotated[str, Field(pattern=r"^[A-Z]+$")])
    fails(["x", "-1"], list[Annotated[int, Field(ge=0)]])


# ----------------------------------------------------------------------------- errors


def test_error_carries_field_type_seen_and_message() -> None:
    with pytest.raises(FieldValueError) as info:
        coerce("x" * 1000, int, field="headcount")
    err = info.value.errors[0]
    assert (err.field, err.expected) == ("headcount", "int")
    assert len(err.seen) <= 160 and err.message
    assert isinstance(info.value, ParseError)


def test_coerce_fields_reports_every_failing_field() -> None:
    with pytest.raises(FieldValueError) as info:
        coerce_fields({"a": "x", "b": "2", "c": "maybe"}, {"a": int, "b": int, "c": bool, "d": str})
    assert info.value.fields == ["a", "c", "d"]
    assert coerce_fields({"b": "2", "a": "yes"}, {"a": bool, "b": int}) == {"a": True, "b": 2}


def test_hostile_inputs_raise_only_field_value_error() -> None:
    fails("[" * 50_000, list[int])
    fails("{" * 50_000, Vehicle)
    nested: Any = []
    for _ in range(5000):
        nested = [nested]
    fails(nested, list[int])
    fails("9" * 10_000, int)
    fails(object(), int)


# ---- a list given for a record: only a one-item list wrapping one object ------------------------


class _Rec(BaseModel):
    a: int = 0


@dataclasses.dataclass
class _DRec:
    a: int = 0


class _TRec(TypedDict, total=False):
    a: int


@pytest.mark.parametrize("target", [_Rec, _DRec, _TRec, Optional[_Rec]])
@pytest.mark.parametrize("text", ["[]", '[{"a": 1}, {"a": 2}]', "[1, 2]", '["a: 1"]', "[[{}]]"])
def test_a_list_for_a_record_is_an_error(target: Any, text: str) -> None:
    with pytest.raises(FieldValueError):
        coerce(text, target)
    with pytest.raises(FieldValueError):
        coerce(json.loads(text), target)


@pytest.mark.parametrize("target", [_Rec, _DRec])
def test_a_one_item_list_wrapping_one_object_is_read(target: Any) -> None:
    value = coerce('[{"a": 3}]', target)
    assert value.a == 3
    assert coerce('[{"a": 3}]', _TRec) == {"a": 3}


def test_tool_calls_accept_a_bare_list_of_calls_but_not_junk() -> None:
    from sigform.types import ToolCalls

    assert len(coerce("[]", ToolCalls)) == 0
    assert coerce('[{"name": "add", "args": {"a": 1}}]', ToolCalls).tool_calls[0].args == {"a": 1}
    for junk in ("[1, 2]", '["add"]', "not json", "[[]]"):
        with pytest.raises(FieldValueError):
            coerce(junk, ToolCalls)
