"""Decimal fields and the values of ``*_percent`` dicts follow the float field's number rules
(/work/shared/parse-corpus/README.md: a currency mark is read unless it contradicts the field;
``%`` only on ``*_percent`` fields, not divided by 100).

Before: ``rates_percent: dict[str, float]`` refused ``{"vat": "20%"}`` (the values were read under
their keys, which are not ``*_percent``), and a ``Decimal`` field refused every currency mark and
grouped thousands (``$12.50``, ``1,048,576``), which a ``float`` field reads: needless errors.
"""

from __future__ import annotations

import copy
import pickle
from decimal import Decimal
from typing import Any, Optional

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sigform as sf
from sigform.types import coerce
from sigform.types.coercion._numbers import CurrencyField, PercentName


def fails(value: Any, annotation: Any, field: str) -> str:
    with pytest.raises(sf.FieldValueError) as info:
        coerce(value, annotation, field=field)
    return str(info.value)


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        ({"vat": "20%", "reduced": "5.5 %"}, dict[str, float], {"vat": 20.0, "reduced": 5.5}),
        ("vat: 20%\nreduced: 5.5%", dict[str, float], {"vat": 20.0, "reduced": 5.5}),
        ({"eu": {"vat": "20%"}}, dict[str, dict[str, float]], {"eu": {"vat": 20.0}}),
        ({"vat": ["20%", "7%"]}, dict[str, list[float]], {"vat": [20.0, 7.0]}),
        ({"vat": "20%"}, dict[str, Decimal], {"vat": Decimal("20")}),
        ({"vat": "20%", "none": None}, dict[str, Optional[float]], {"vat": 20.0, "none": None}),
    ],
)
def test_the_values_of_a_percent_field_take_a_percent_sign(
    value: Any, annotation: Any, expected: Any
) -> None:
    assert coerce(value, annotation, field="rates_percent") == expected


def test_a_percent_sign_stays_refused_off_percent_fields() -> None:
    said = fails({"vat": "20%"}, dict[str, float], "rates")
    assert "percent sign is only accepted on *_percent fields" in said
    # a key of its own that says percent is enough, as before
    assert coerce({"vat_percent": "20%"}, dict[str, float], field="rates") == {"vat_percent": 20.0}
    # a percent value with a currency mark has no single reading
    fails({"vat": "$20%"}, dict[str, float], "rates_percent")


def test_a_percent_dict_keeps_the_currency_the_field_names() -> None:
    fails({"fee": "€5"}, dict[str, float], "fees_usd_percent")
    assert coerce({"fee": "5%"}, dict[str, float], field="fees_usd_percent") == {"fee": 5.0}


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("$2,450.00", "total", Decimal("2450.00")),
        ("2,450.00 USD", "amount", Decimal("2450.00")),
        ("-$45.10", "balance_usd", Decimal("-45.10")),
        ("€12.50", "price", Decimal("12.50")),
        ("12.50 €", "price_eur", Decimal("12.50")),
        ("£3", "fee", Decimal("3")),
        ("US$ 0.10", "cost_usd", Decimal("0.10")),
        ("1,048,576", "count", Decimal("1048576")),
        ("8.25%", "rate_percent", Decimal("8.25")),
        ("12.50", "plain", Decimal("12.50")),
        ("1e3", "plain", Decimal("1E+3")),
    ],
)
def test_a_decimal_field_reads_what_a_float_field_reads_exactly(
    text: str, field: str, expected: Decimal
) -> None:
    got = coerce(text, Decimal, field=field)
    assert isinstance(got, Decimal) and got == expected and str(got) == str(expected)
    assert coerce(text, Optional[Decimal], field=field) == expected


@pytest.mark.parametrize(
    ("text", "field", "why"),
    [
        ("€12", "price_usd", "is not in USD"),
        ("$12", "fee_eur", "is not in EUR"),
        ("$5 EUR", "total", "names two currencies"),
        ("8%", "rate", "percent sign is only accepted"),
        ("2,900-3,100", "total", "valid decimal"),  # no number's shape: pydantic says, as before
        ("about 40", "total", "valid decimal"),
        ("", "total", "empty"),
    ],
)
def test_a_decimal_field_refuses_what_a_float_field_refuses(text: str, field: str, why: str) -> None:
    assert why in fails(text, Decimal, field)
    fails(text, float, field)


def test_decimal_constraints_still_hold() -> None:
    from typing import Annotated

    from pydantic import Field

    fails("$12.505", Annotated[Decimal, Field(decimal_places=2)], "price")
    assert coerce("$12.50", Annotated[Decimal, Field(decimal_places=2)], field="price") == Decimal("12.50")


def test_a_decimal_answer_through_an_adapter() -> None:
    from sigform.signatures import InputField, OutputField, make_signature

    signature = make_signature({
        "invoice": (str, InputField()),
        "total": (Decimal, OutputField(desc="the total in EUR")),
        "rates_percent": (dict[str, float], OutputField()),
    })
    parsed = sf.JSONAdapter().parse(signature, '{"total": "€1,234.50", "rates_percent": {"vat": "20%"}}')
    assert parsed == {"total": Decimal("1234.50"), "rates_percent": {"vat": 20.0}}
    with pytest.raises(sf.FieldValueError, match="is not in EUR"):
        sf.JSONAdapter().parse(signature, '{"total": "$1,234.50", "rates_percent": {}}')


MARKS = st.sampled_from(["", "$", "€", "£", "USD ", "EUR ", " USD", " €", "US$"])
FIELDS = st.sampled_from(["total", "price_usd", "fee_eur", "rate_percent", "amount_gbp"])
JUNK = st.sampled_from(list("0123456789,.$€%- eE+"))


@st.composite
def money_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return "".join(draw(st.lists(JUNK, max_size=14)))
    amount = draw(st.decimals(min_value=-10**9, max_value=10**9, places=2, allow_nan=False))
    digits = f"{abs(amount):,}" if draw(st.booleans()) else str(abs(amount))
    sign = "-" if amount < 0 else ""
    mark = draw(MARKS)
    pct = "%" if draw(st.integers(0, 5)) == 0 else ""
    return f"{sign}{mark}{digits}{pct}" if not mark.startswith(" ") else f"{sign}{digits}{pct}{mark}"


@settings(max_examples=400, deadline=None)
@given(money_texts(), FIELDS)
@example("0E00000", "total")  # an exponent's leading zeros: float refused it, Decimal read 0
@example("2.5e-00003", "total")
@example("1E310", "total")  # too large for a float: Decimal reads it; the E is no currency mark
def test_decimal_and_float_fields_agree_on_every_money_text(text: str, field: str) -> None:
    # one set of rules: both read the same number, or both refuse (Decimal keeps every digit)
    try:
        as_float: float | None = coerce(text, float, field=field)
    except sf.FieldValueError:
        as_float = None
    try:
        as_decimal: Decimal | None = coerce(text, Decimal, field=field)
    except sf.FieldValueError:
        as_decimal = None
    if as_float is None:
        # Decimal may still read a number float cannot hold (1E310), never a marked amount
        marks = ("$", "€", "£", "%", ",", "USD", "EUR", "GBP")
        assert as_decimal is None or not any(mark in text for mark in marks), (text, as_decimal)
    else:
        assert as_decimal is not None and float(as_decimal) == as_float, (text, as_decimal, as_float)


def test_names_that_take_a_percent_copy_and_pickle_with_it() -> None:
    for name in (PercentName("vat"), CurrencyField("vat", "EUR", "why", percent=True)):
        for back in (pickle.loads(pickle.dumps(name)), copy.deepcopy(name), copy.copy(name)):
            assert back == "vat" and back.percent is True
