"""A currency mark on a number contradicting the field's *description* is an error (issue 13;
/work/shared/parse-corpus/README.md: "unless it contradicts the field's name or description")."""

from __future__ import annotations

from typing import Optional

import pytest

import sigform as sf
from sigform.errors import FieldValueError
from sigform.signatures import InputField, OutputField, make_signature
from sigform.types.coercion._numbers import described_currency


def sig(desc: str, annotation: object = float) -> object:
    return make_signature({"q": (str, InputField()), "price": (annotation, OutputField(desc=desc))})


@pytest.mark.parametrize("seen", ["$12", "USD 12", "12 dollars", "£12", "12 GBP", "US$12"])
def test_a_mark_of_another_currency_than_the_description_names_is_refused(seen: str) -> None:
    for desc in ("amount in EUR", "the price in euros", "price (€)"):
        with pytest.raises(FieldValueError) as info:
            sf.JSONAdapter().parse(sig(desc), f'{{"price": "{seen}"}}')
        if "dollars" not in seen:
            assert "EUR" in str(info.value) and "described" in str(info.value)


@pytest.mark.parametrize("seen", ["€12", "12 EUR", "EUR 12", "12", "12.0"])
def test_the_described_currency_or_no_mark_reads(seen: str) -> None:
    assert sf.JSONAdapter().parse(sig("amount in EUR"), f'{{"price": "{seen}"}}') == {"price": 12.0}
    chat = f"[[ ## price ## ]]\n{seen}"
    assert sf.ChatAdapter().parse(sig("amount in EUR", Optional[int]), chat) == {"price": 12}


def test_descriptions_naming_no_currency_or_several_check_nothing() -> None:
    for desc in ("", "the price", "converted from USD to EUR", "price in $"):
        assert sf.JSONAdapter().parse(sig(desc), '{"price": "$12"}') == {"price": 12.0}
    assert described_currency("amount in EUR") == "EUR" and described_currency("USD or EUR") is None
    assert described_currency("cost in £") == "GBP" and described_currency("in $") is None


def test_a_text_field_with_a_currency_description_is_left_alone() -> None:
    s = sig("amount in EUR", str)
    assert s.output_fields["price"].validation_annotation is str
    assert sf.JSONAdapter().parse(s, '{"price": "$12"}') == {"price": "$12"}
