"""json-repair never silently changes what the model wrote (issue 13, item 3).

Before: an unquoted value that is not JSON came back as its first token through every adapter
(``"n": 1 000 000`` -> 1, ``12 or 13`` -> 12, ``+-5`` -> -5), and other repairs dropped text
(``"a" "b"`` -> "a", ``"x"y`` -> "x") or rewrote it (``'it's'`` -> "it's'").
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sigform as sf
from sigform.errors import ParseError
from sigform.signatures import InputField, OutputField, make_signature
from sigform.types import JSONTextError, parse_json_text

ADAPTERS = [sf.ChatAdapter(), sf.JSONAdapter(), sf.XMLAdapter()]


def _sig(**outputs: Any) -> Any:
    fields: dict[str, Any] = {"text": (str, InputField())}
    fields.update({name: (ann, OutputField()) for name, ann in outputs.items()})
    return make_signature(fields)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
@pytest.mark.parametrize(
    "bare", ["12 or 13", "12 to 13", "+-5", "5 apples", "2e", "-", "12 13", "1.5 or 2.5", "3%", "0x1F"]
)
def test_a_bare_value_that_is_not_one_number_is_refused_for_a_number_field(adapter: Any, bare: str) -> None:
    annotation = float if "." in bare else int
    with pytest.raises(ParseError):
        adapter.parse(_sig(n=annotation, city=str), f'{{"n": {bare}, "city": "Oslo"}}')


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_digits_grouped_by_spaces_are_one_number(adapter: Any) -> None:
    sig = _sig(n=int, city=str)
    assert adapter.parse(sig, '{"n": 1 000 000, "city": "Oslo",}') == {"n": 1_000_000, "city": "Oslo"}
    assert adapter.parse(_sig(x=float, city=str), "{'x': -12 345.5, 'city': 'Oslo'}")["x"] == -12345.5


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_a_bare_value_reaches_a_str_field_whole(adapter: Any) -> None:
    sig = _sig(note=str, n=int)
    assert adapter.parse(sig, '{"note": 12 or 13, "n": 4,}')["note"] == "12 or 13"
    assert adapter.parse(sig, "{note: +-5, n: 4}")["note"] == "+-5"


@pytest.mark.parametrize(
    "text",
    [
        '{"s": "a" "b", "n": 1,}',  # json-repair kept "a"
        '{"s": "x"y, "n": 1,}',  # kept "x"
        '{"s": "5" apples, "n": 1,}',  # kept "5"
        '{"s": "a", "n": 12\n13}',  # kept 12
        '{"s": "a", "l": [1 000], "n": 1}',  # one number or two?
    ],
)
def test_a_repair_that_would_drop_text_is_refused(text: str) -> None:
    with pytest.raises(JSONTextError):
        parse_json_text(text)


def test_repairs_that_keep_everything_still_work() -> None:
    assert parse_json_text("{'s': 'it's', 'n': 1,}") == {"s": "it's", "n": 1}
    assert parse_json_text("{'s': 'rock 'n' roll'}") == {"s": "rock 'n' roll"}
    assert parse_json_text('{"s": "say "hi" now", n: 2, ok: True, x: None, // note\n}') == {
        "s": 'say "hi" now', "n": 2, "ok": True, "x": None,
    }
    assert parse_json_text('{"c": New York, "n": 1e3, "m": -4.5, "k": 1,000}') == {
        "c": "New York", "n": 1000.0, "m": -4.5, "k": "1,000",
    }


def test_a_percent_or_currency_json_repair_used_to_strip_is_judged_by_the_field() -> None:
    adapter = sf.JSONAdapter()
    assert adapter.parse(_sig(rate_percent=float), '{"rate_percent": 8.25%,}') == {"rate_percent": 8.25}
    with pytest.raises(ParseError):
        adapter.parse(_sig(count=int), '{"count": 8%,}')  # % only on *_percent fields


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=99_999), min_size=2, max_size=4))
def test_spaced_digits_are_one_grouped_number_or_an_error(parts: list[int]) -> None:
    written = " ".join(str(p) for p in parts)
    try:
        value = sf.JSONAdapter().parse(_sig(n=int), f'{{"n": {written},}}')["n"]
    except ParseError:
        return
    groups = written.split(" ")
    assert all(len(g) == 3 for g in groups[1:]) and len(groups[0]) <= 3
    assert value == int("".join(groups))
