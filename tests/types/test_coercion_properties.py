"""Property tests: render then coerce gives the value back; junk never escapes as another error."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import itertools
import json
import os
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

import sigform.types.coercion as coercion
from sigform.errors import FieldValueError
from sigform.types import coerce, render_value, type_name

# SF_EXAMPLES=2000 for a longer local hunt; the default keeps the suite fast
EXAMPLES = int(os.environ.get("SF_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _surface_internal_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coercion, "_RERAISE_INTERNAL", True)


class Color(enum.Enum):
    RED = "red"
    DARK_BLUE = "dark blue"


class Tier(enum.Enum):
    BRONZE = 10
    GOLD = 30


_counter = itertools.count()
text = st.text(max_size=12)
stripped_text = text.map(str.strip)

SCALARS: dict[Any, st.SearchStrategy[Any]] = {
    str: stripped_text,
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    dt.date: st.dates(),
    dt.datetime: st.datetimes(),
    # read by the float fields' number rules since fixes22 (exactly: places kept)
    decimal.Decimal: st.decimals(
        allow_nan=False, allow_infinity=False, places=2, min_value=-(10**12), max_value=10**12
    ),
    Literal["a", "b c", "None"]: st.sampled_from(["a", "b c", "None"]),
    Literal[1, 2, 3]: st.sampled_from([1, 2, 3]),
    Color: st.sampled_from(list(Color)),
    Tier: st.sampled_from(list(Tier)),
    Union[int, str]: st.one_of(st.integers(), stripped_text),
}


def values_for(annotation: Any) -> st.SearchStrategy[Any]:
    if annotation in SCALARS:
        return SCALARS[annotation]
    origin = getattr(annotation, "__origin__", None)
    args = getattr(annotation, "__args__", ())
    if origin is list:
        return st.lists(values_for(args[0]), max_size=4)
    if origin is dict:
        return st.dictionaries(text, values_for(args[1]), max_size=3)
    if origin is set:
        return st.sets(values_for(args[0]), max_size=4)
    if origin is Union:  # Optional[X]
        return st.none() | values_for(args[0])
    fields = annotation.model_fields
    return st.fixed_dictionaries({n: values_for(f.annotation) for n, f in fields.items()}).map(
        lambda d: annotation(**d)
    )


def _model(field_types: list[Any]) -> Any:
    fields = {f"f{i}": (t, ...) for i, t in enumerate(field_types)}
    return create_model(f"Rec{next(_counter)}", __base__=BaseModel, **fields)


annotations = st.recursive(
    st.sampled_from(list(SCALARS)),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),
        inner.map(lambda t: Optional[t]),
        inner.map(lambda t: dict[str, t]),
        st.lists(inner, min_size=1, max_size=3).map(_model),
    ),
    max_leaves=5,
) | st.just(set[int])


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[Any, Any]:
    annotation = draw(annotations)
    return annotation, draw(values_for(annotation))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, BaseModel):
        return type(a) is type(b) and all(_same(getattr(a, k), getattr(b, k)) for k in type(a).model_fields)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@SETTINGS
@given(typed_values())
def test_render_then_coerce_round_trips(pair: tuple[Any, Any]) -> None:
    annotation, value = pair
    text = render_value(value, annotation)
    back = coerce(text, annotation)
    assert _same(back, value), (type_name(annotation), text, back)


@SETTINGS
@given(annotations, st.text(max_size=60))
def test_junk_text_raises_only_field_value_error(annotation: Any, junk: str) -> None:
    try:
        coerce(junk, annotation)
    except FieldValueError as exc:
        assert exc.errors and exc.errors[0].message


JUNK_CHARS = st.sampled_from(list("{}[]\",:- \n*1.0aTnule`$%'#"))


@SETTINGS
@given(annotations, st.lists(JUNK_CHARS, max_size=40).map("".join))
def test_structured_junk_raises_only_field_value_error(annotation: Any, junk: str) -> None:
    try:
        coerce(junk, annotation)
    except FieldValueError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


@SETTINGS
@given(annotations, json_values)
def test_parsed_json_junk_raises_only_field_value_error(annotation: Any, value: Any) -> None:
    try:
        coerce(value, annotation)
    except FieldValueError:
        pass
    try:
        coerce(json.dumps(value), annotation)
    except FieldValueError:
        pass
