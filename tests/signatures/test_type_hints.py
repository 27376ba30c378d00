"""Misspelt type names in string signatures get a did-you-mean, and an unknown custom type says
how to pass it (issue 17, item 8)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import sigform as sf


class Item(BaseModel):
    name: str


@pytest.mark.parametrize(
    ("text", "wrong", "meant"),
    [
        ("question -> answer: flaot", "flaot", "float"),
        ("question -> ok: Bool", "Bool", "bool"),
        ("text -> items: lst[str]", "lst", "list"),
        ("text -> counts: dict[str, innt]", "innt", "int"),
        ("photo: Imgae -> caption", "Imgae", "Image"),
        ("when -> day: datetme", "datetme", "datetime"),
    ],
)
def test_typos_get_a_suggestion(text: str, wrong: str, meant: str) -> None:
    with pytest.raises(sf.SignatureError) as info:
        sf.make_signature(text)
    message = str(info.value)
    assert f"unknown type name {wrong!r}" in message
    assert f"did you mean {meant!r}?" in message
    assert "field `" in message  # names the field


def test_an_unknown_custom_type_says_how_to_pass_it() -> None:
    with pytest.raises(sf.SignatureError) as info:
        sf.make_signature("text -> items: list[Item]")
    message = str(info.value)
    assert "field `items`" in message
    assert "types={'Item': Item}" in message
    # and doing what it says works
    sig = sf.make_signature("text -> items: list[Item]", types={"Item": Item})
    assert sig.output_fields["items"].annotation == list[Item]


def test_a_near_miss_of_your_own_type_is_suggested() -> None:
    with pytest.raises(sf.SignatureError, match="did you mean 'Item'"):
        sf.make_signature("text -> items: list[Itme]", types={"Item": Item})


def test_no_suggestion_for_a_lowercase_unknown_name() -> None:
    with pytest.raises(sf.SignatureError) as info:
        sf.make_signature("text -> x: zzzqqq")
    assert "did you mean" not in str(info.value) and "types=" not in str(info.value)
