"""A currency mark on a ``*_percent`` field (or a value of its dicts) is money, not a percentage:
an error, never the bare number (parse-corpus policy: a mark that contradicts the field's name
is an error). ``fee_percent: float`` read ``"$20"`` as ``20.0`` -- 20 percent -- and 262ae5f
extended that reading to Decimal fields and the values of ``*_percent`` dicts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import sigform as sf
from sigform.types import coerce


@pytest.mark.parametrize(
    ("value", "annotation", "field"),
    [
        ("$20", float, "fee_percent"),
        ("20 USD", int, "fee_percent"),
        ("€20", Decimal, "discount_percent"),
        ({"vat": "$20"}, dict[str, float], "rates_percent"),
        ({"vat": "£20"}, dict[str, Decimal], "rates_percent"),
        ({"vat_percent": "$20"}, dict[str, float], "rates"),
        (["20%", "$5"], list[float], "shares_percent"),
    ],
)
def test_money_on_a_percent_field_is_an_error(value: Any, annotation: Any, field: str) -> None:
    with pytest.raises(sf.FieldValueError, match=r"is an amount of money; a \*_percent field holds"):
        coerce(value, annotation, field=field)


def test_percentages_and_plain_numbers_still_read_there() -> None:
    assert coerce("8.25%", float, field="fee_percent") == 8.25
    assert coerce("8.25", Decimal, field="fee_percent") == Decimal("8.25")
    rates = coerce({"vat": "20%", "reduced": 5}, dict[str, float], field="rates_percent")
    assert rates == {"vat": 20.0, "reduced": 5.0}
    assert coerce("$20", float, field="fee") == 20.0  # money stays money elsewhere
