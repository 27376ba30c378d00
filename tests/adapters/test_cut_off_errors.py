"""The cut-off error says what was read before the cut (issue 27, finding 18).

A JSON answer cut by max_tokens was reported as "cut off", then every field as "missing; saw
(nothing)" while the raw completion shown held ``"item": "washing machine", "quantity": 1``, in
words nesting "(the value is cut off (cut at a value that may be incomplete))".
"""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.adapters.output_limit import read_before_cut
from sigform.errors import StructureError
from sigform.testing import ScriptedLM

CUT = '{"item": "washing machine", "quantity": 1, "notes": "Barely used, collect from the'


def _error(text: str, adapter: sf.Adapter) -> StructureError:
    sig = sf.make_signature(
        {
            "ad": (str, sf.InputField()),
            "item": (str, sf.OutputField()),
            "quantity": (int, sf.OutputField()),
            "notes": (str, sf.OutputField()),
            "price": (float, sf.OutputField()),
        }
    )
    lm = ScriptedLM([{"text": text, "finish_reason": "length"}] * 3)
    with pytest.raises(StructureError) as info:
        sf.Predict(sig, lm=lm, adapter=adapter)(ad="a washing machine", config={"max_tokens": 20})
    return info.value


@pytest.mark.parametrize("adapter", [sf.JSONAdapter(), sf.ChatAdapter()], ids=["json", "chat"])
def test_a_cut_off_json_answer_shows_what_was_read_before_the_cut(adapter: sf.Adapter) -> None:
    error = _error(CUT, adapter)
    by_field = {e.field: e for e in error.errors}
    assert by_field["item"].seen == '"washing machine"' and "read before the cut" in by_field["item"].message
    assert by_field["quantity"].seen == "1"
    assert by_field["notes"].message == "cut off in the middle of its value"
    assert by_field["price"].message == "not reached before the cut"
    message = str(error)
    assert "max_tokens=20" in message and "no output field found" not in message
    assert "((" not in message.replace(" ", "") and "cut off (cut" not in message


def test_a_number_at_the_cut_is_not_taken_as_complete() -> None:
    assert read_before_cut('{"a": "x", "n": 12') == ({"a": "x"}, "n")
    assert read_before_cut('{"a": "x", "b": tr') == ({"a": "x"}, "b")
    assert read_before_cut('{"a": "x"') == ({"a": "x"}, None)
    assert read_before_cut("no object") == ({}, None)


def test_a_cut_json_value_is_described_without_nested_parentheses() -> None:
    from sigform.errors import FieldValueError
    from sigform.types import coerce

    with pytest.raises(FieldValueError) as info:
        coerce('{"a": 1, "b": "x', dict[str, str], field="f")
    assert "the value is cut off in the middle of a string" in str(info.value)
