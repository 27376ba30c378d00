"""Issue 12's parse policy (currency marks, month-name dates) and issue 13 items 11 and 13.

Before: ``$2,450.00`` for a plain ``float`` was refused ("a currency sign is only accepted on
*_usd fields"), ``May 1, 2025`` / ``12 February 2025`` for a ``date`` were refused, ``null`` /
``N/A`` for a ``list[str]`` became ``['null']``, and a lone surrogate in an input passed the
input check and failed later with a raw ``UnicodeEncodeError``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sigform as sf
from sigform.errors import InputError
from sigform.testing import ScriptedLM
from sigform.types import coerce


def fails(value: Any, annotation: Any, field: str = "value") -> str:
    with pytest.raises(sf.FieldValueError) as info:
        coerce(value, annotation, field=field)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("$2,450.00", "total", 2450.0),
        ("2,450.00 USD", "amount", 2450.0),
        ("-$45.10", "balance_usd", -45.1),
        ("€12.50", "price", 12.5),
        ("12.50 €", "price_eur", 12.5),
        ("£3", "fee", 3.0),
        ("US$ 7", "cost_usd", 7.0),
        ("CHF 100", "amount_chf", 100.0),
    ],
)
def test_a_currency_mark_is_read_on_a_numeric_field(text: str, field: str, expected: float) -> None:
    assert coerce(text, float, field=field) == expected


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("€12", "price_usd"), ("$12", "fee_eur"), ("£3.50", "priceInDollars"), ("$5 EUR", "total"),
        ("12 USD%", "x"),
    ],
)
def test_a_currency_mark_that_contradicts_the_field_is_an_error(text: str, field: str) -> None:
    fails(text, float, field=field)


def test_a_money_answer_through_the_adapters() -> None:
    sig = "invoice -> total: float, due: date"
    lm = ScriptedLM(["[[ ## total ## ]]\n$2,450.00\n\n[[ ## due ## ]]\nMay 1, 2025\n\n[[ ## completed ## ]]"])
    out = sf.Predict(sig, lm=lm)(invoice="...")
    assert out.total == 2450.0 and out.due == dt.date(2025, 5, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("May 1, 2025", dt.date(2025, 5, 1)),
        ("1 May 2025", dt.date(2025, 5, 1)),
        ("12 February 2025", dt.date(2025, 2, 12)),
        ("Feb 12th, 2025", dt.date(2025, 2, 12)),
        ("1st of May 2025", dt.date(2025, 5, 1)),
        ("Sept. 3, 2024", dt.date(2024, 9, 3)),
        ("2025 May 1", dt.date(2025, 5, 1)),
        ("Thursday, May 1, 2025", dt.date(2025, 5, 1)),
        ("2025/05/01", dt.date(2025, 5, 1)),
        ("2025-05-01", dt.date(2025, 5, 1)),
        ('"december 31 1999."', dt.date(1999, 12, 31)),
    ],
)
def test_dates_with_a_month_name_and_a_year_in_any_common_order(text: str, expected: dt.date) -> None:
    assert coerce(text, dt.date) == expected


@pytest.mark.parametrize(
    "text",
    [
        "01/02/2025", "1/2/25", "July 18", "18 July", "Feb 30, 2025", "Friday, May 1, 2025", "May 2025",
        "Mayo 1, 2025",
    ],
)
def test_dates_that_need_a_guess_stay_errors(text: str) -> None:
    fails(text, dt.date)


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=dt.date(1000, 1, 1), max_value=dt.date(9999, 12, 31)), st.sampled_from(range(5)))
def test_any_date_written_with_its_month_name_reads_back(day: dt.date, form: int) -> None:
    month, n, y = day.strftime("%B"), day.day, day.year
    text = [
        f"{month} {n}, {y}", f"{n} {month} {y}", f"{day.strftime('%b')} {n}th, {y}", f"{n} of {month} {y}",
        f"{day.strftime('%A')}, {month} {n}, {y}",
    ][form]
    assert coerce(text, dt.date) == day


@pytest.mark.parametrize("text", ["null", "None", "N/A", "n/a.", "`null`", "NIL"])
def test_a_no_value_word_is_not_a_one_item_list(text: str) -> None:
    fails(text, list[str])
    fails(text, set[str])


def test_optional_list_reads_null_as_none_and_brackets_as_empty() -> None:
    assert coerce("null", Optional[list[str]]) is None
    assert coerce("[]", list[str]) == []
    assert coerce("- N/A\n- b", list[str]) == ["N/A", "b"]  # an item may say N/A


def test_a_lone_surrogate_in_an_input_is_an_input_error_naming_the_field() -> None:
    program = sf.Predict("note, tags: list[str] -> answer", lm=ScriptedLM([]))
    with pytest.raises(InputError, match=r"`note`.*surrogate"):
        program(note="bad \ud800 text", tags=["a"])
    with pytest.raises(InputError, match=r"`tags`.*surrogate"):
        program(note="fine", tags=["ok", "x\udfff"])
