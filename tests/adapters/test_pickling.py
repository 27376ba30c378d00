"""Adapters pickle (a program sent to another process, e.g. a Ray worker) and work after loading."""

from __future__ import annotations

import pickle

import pytest

import sigform as sf


@pytest.mark.parametrize("make", [sf.ChatAdapter, sf.JSONAdapter, sf.XMLAdapter, sf.AutoAdapter])
def test_an_adapter_pickles_and_formats_the_same_afterwards(make: type) -> None:
    adapter = make()
    signature = sf.make_signature("question: str -> answer: int")
    before = adapter.format(signature, [], {"question": "How many?"})
    again = pickle.loads(pickle.dumps(adapter))
    assert again.format(signature, [], {"question": "How many?"}) == before
    assert again._lock is not adapter._lock  # a lock of its own, not a shared one


def test_template_overrides_survive_pickling() -> None:
    adapter = sf.ChatAdapter(templates={"system": "Answer briefly. {{ instructions }}"})
    again = pickle.loads(pickle.dumps(adapter))
    signature = sf.make_signature("question -> answer")
    messages = again.format(signature, [], {"question": "q"})
    assert messages[0]["content"].startswith("Answer briefly.")
    assert messages == adapter.format(signature, [], {"question": "q"})
