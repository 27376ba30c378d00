"""A currency mark on a number contradicting the field's *description* is an error (issue 13;
/work/shared/parse-corpus/README.md: "unless it contradicts the field's name or description")."""

from __future__ import annotations

import json
import typing
from decimal import Decimal
from typing import Optional

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- the field's currency reaches list/tuple/set items and dict values (issue 13 follow-up) ---

HOLDERS: list[tuple[object, str, str]] = [  # annotation, a value with `$12` in it, the item path
    (list[float], '["€3", "$12"]', "[1]"),
    (list[int], '["$12"]', "[0]"),
    (Optional[list[float]], '["$12"]', "[0]"),
    (list[Optional[float]], '[null, "$12"]', "[1]"),
    (tuple[float, float], '["€1", "$12"]', "[1]"),
    (tuple[float, ...], '["$12"]', "[0]"),
    (set[float], '["$12"]', "[0]"),
    (dict[str, float], '{"apple": "$12"}', "apple"),
    (dict[str, list[float]], '{"apple": ["1", "$12"]}', "apple[1]"),
    (list[list[float]], '[["$12"]]', "[0][0]"),
]


@pytest.mark.parametrize(("annotation", "value", "path"), HOLDERS)
def test_an_item_in_another_currency_than_the_description_names_is_refused(
    annotation: object, value: str, path: str
) -> None:
    with pytest.raises(FieldValueError) as info:
        sf.JSONAdapter().parse(sig("amounts in EUR", annotation), f'{{"price": {value}}}')
    message = str(info.value)
    assert "field `price`" in message and f"{path}: '$12' is not in EUR" in message
    assert "the currency field 'price' is described in" in message


def test_an_item_list_in_text_is_checked_item_by_item() -> None:
    chat = "[[ ## price ## ]]\n€3, $12, 4"
    with pytest.raises(FieldValueError, match=r"\[1\]: '\$12' is not in EUR"):
        sf.ChatAdapter().parse(sig("amounts in EUR", list[float]), chat)
    xml = "<price>[\"€3\", \"USD 12\"]</price>"
    with pytest.raises(FieldValueError, match=r"\[1\]: 'USD 12' is not in EUR"):
        sf.XMLAdapter().parse(sig("amounts in EUR", list[float]), xml)


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (list[float], '["€3", "12 EUR", "4"]', [3.0, 12.0, 4.0]),
        (list[int], '["EUR 3", 4]', [3, 4]),
        (tuple[float, float], '["€1", "2"]', (1.0, 2.0)),
        (dict[str, float], '{"apple": "€2", "pear": 3}', {"apple": 2.0, "pear": 3.0}),
        (dict[str, list[float]], '{"apple": ["€1", "2 EUR"]}', {"apple": [1.0, 2.0]}),
        (Optional[list[float]], "null", None),
    ],
)
def test_items_in_the_described_currency_or_unmarked_read(
    annotation: object, value: str, expected: object
) -> None:
    got = sf.JSONAdapter().parse(sig("amounts in EUR", annotation), f'{{"price": {value}}}')
    assert got == {"price": expected}


def test_dict_values_keep_the_currency_of_the_field_name() -> None:
    s = make_signature({"q": (str, InputField()), "prices_usd": (dict[str, float], OutputField())})
    refused = r"apple: '€12' is not in USD, the currency of field 'prices_usd'"
    with pytest.raises(FieldValueError, match=refused):
        sf.JSONAdapter().parse(s, '{"prices_usd": {"apple": "€12"}}')
    assert sf.JSONAdapter().parse(s, '{"prices_usd": {"apple": "$12", "fee_usd": "USD 1"}}') == {
        "prices_usd": {"apple": 12.0, "fee_usd": 1.0}
    }


class Line(pydantic.BaseModel):
    item: str
    price: float = pydantic.Field(description="unit price in EUR")
    price_usd: Optional[float] = None


def test_a_nested_model_field_described_in_a_currency_refuses_another_mark() -> None:
    with pytest.raises(FieldValueError, match=r"\[0\]\.price: '\$12' is not in EUR"):
        sf.JSONAdapter().parse(sig("", list[Line]), '{"price": [{"item": "tea", "price": "$12"}]}')
    got = sf.JSONAdapter().parse(sig("", list[Line]), '{"price": [{"item": "tea", "price": "€12"}]}')
    assert got["price"][0].price == 12.0


def test_a_record_inside_the_field_keeps_its_own_currencies() -> None:
    # the field's "in EUR" stops at the record: its `price_usd` is in dollars by name
    got = sf.JSONAdapter().parse(
        sig("order lines, prices in EUR", list[Line]),
        '{"price": [{"item": "tea", "price": "€2", "price_usd": "$2.2"}]}',
    )
    assert got["price"][0].price_usd == 2.2


def test_a_union_with_text_keeps_a_contradicting_amount_as_text() -> None:
    # `$12` is no EUR number, so the str member keeps the text as written rather than a bare 12
    assert sf.JSONAdapter().parse(sig("amount in EUR", float | str), '{"price": "$12"}') == {"price": "$12"}
    assert sf.JSONAdapter().parse(sig("amount in EUR", float | str), '{"price": "€12"}') == {"price": 12.0}


# a mark -> whether it is in EUR; a mark starting with a space goes after the number
_MARKS = {
    "": True, "€": True, "EUR ": True, " EUR": True, "$": False, "USD ": False, "£": False, " GBP": False
}

number_shapes = st.recursive(
    st.sampled_from([int, float, Decimal]),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),
        inner.map(lambda t: Optional[t]),
        inner.map(lambda t: dict[str, t]),
        inner.map(lambda t: tuple[t, ...]),
    ),
    max_leaves=4,
)


def _marked(amount: int, mark: str) -> str:
    return str(amount) + mark if mark.startswith(" ") else mark + str(amount)


def _amounts(shape: object) -> st.SearchStrategy[tuple[object, object, bool]]:
    """(JSON value with marked amounts, the value expected, whether every mark is in EUR)."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if shape in (int, float, Decimal):
        return st.tuples(st.integers(0, 999), st.sampled_from(sorted(_MARKS))).map(
            lambda p: (_marked(p[0], p[1]), shape(p[0]), _MARKS[p[1]])
        )
    if origin is typing.Union:
        return st.one_of(st.just((None, None, True)), _amounts(args[0]))
    if origin is dict:
        return st.dictionaries(st.sampled_from("abcdef"), _amounts(args[1]), max_size=3).map(
            lambda d: (
                {k: v[0] for k, v in d.items()},
                {k: v[1] for k, v in d.items()},
                all(v[2] for v in d.values()),
            )
        )
    build = list if origin is list else tuple
    return st.lists(_amounts(args[0]), max_size=3).map(
        lambda xs: ([x[0] for x in xs], build(x[1] for x in xs), all(x[2] for x in xs))
    )


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_described_currency_reaches_every_number_the_field_holds(data: st.DataObject) -> None:
    shape = data.draw(number_shapes)
    value, expected, all_eur = data.draw(_amounts(shape))
    completion = json.dumps({"price": value})
    if all_eur:
        assert sf.JSONAdapter().parse(sig("amounts in EUR", shape), completion) == {"price": expected}
    else:
        with pytest.raises(FieldValueError, match="is not in EUR, the currency field 'price' is described"):
            sf.JSONAdapter().parse(sig("amounts in EUR", shape), completion)


def test_a_name_carrying_a_currency_copies_and_pickles_with_it() -> None:
    import copy
    import pickle

    from sigform.types.coercion._numbers import CurrencyField

    name = CurrencyField("price", "EUR", "the currency field 'price' is described in")
    for back in (pickle.loads(pickle.dumps(name)), copy.deepcopy(name), copy.copy(name)):
        assert (back, back.currency, back.why) == ("price", "EUR", name.why)
