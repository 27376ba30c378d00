"""A model that echoes the request (small local models do) must not have the echo read as its answer."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.errors import ParseError


def test_backticked_marker_mentions_are_not_headers():
    sig = sf.make_signature("text -> payee, amount: float")
    echoed = (
        "[[ ## text ## ]]\nPaid $3 to Bob.\n\n"
        "Respond with `[[ ## payee ## ]]`, then `[[ ## amount ## ]]`, and end with `[[ ## completed ## ]]`."
    )
    with pytest.raises(ParseError):
        sf.ChatAdapter().parse(sig, echoed)


def test_real_headers_after_an_echo_are_read():
    sig = sf.make_signature("text -> payee, amount: float")
    text = (
        "Respond with `[[ ## payee ## ]]` then `[[ ## amount ## ]]`.\n\n"
        "[[ ## payee ## ]]\nBob\n\n[[ ## amount ## ]]\n3\n\n[[ ## completed ## ]]"
    )
    assert sf.ChatAdapter().parse(sig, text) == {"payee": "Bob", "amount": 3.0}


def test_final_user_message_names_fields_without_literal_markers():
    sig = sf.make_signature("text -> payee, amount: float")
    messages = sf.ChatAdapter().format(sig, [], {"text": "Paid $3 to Bob."})
    reminder = messages[-1]["content"]
    assert "`payee`, `amount`" in reminder
    assert "[[ ## payee ## ]]" not in reminder


def test_labels_are_read_when_a_value_contains_double_brackets():
    sig = sf.make_signature("question -> note, count: int")
    text = 'note: see [[wiki]] page\ncount: 3'
    assert sf.TwoStepAdapter().parse(sig, text) == {"note": "see [[wiki]] page", "count": 3}
