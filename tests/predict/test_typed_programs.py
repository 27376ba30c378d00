"""Issue 25 at run time: typed predictions, examples as mappings, demos checked when a program is built."""

from __future__ import annotations

import pickle

import pytest

import sigform as sf
from sigform.testing import ScriptedLM


class Order(sf.Signature):
    """Read the order."""

    text: str = sf.InputField()
    item: str = sf.OutputField()
    quantity: int = sf.OutputField()


def _lm(n: int = 1) -> ScriptedLM:
    return ScriptedLM(['{"item": "pen", "quantity": 2}'] * n)


def test_a_program_built_from_a_class_returns_instances_of_it() -> None:
    lm = _lm(2)
    program = sf.Predict(Order, lm=lm)
    pred = program(text="two pens")
    assert type(pred) is Order and isinstance(pred, sf.Prediction)
    assert (pred.item, pred.quantity) == ("pen", 2) and pred._meta.adapter
    assert pred == sf.Prediction(item="pen", quantity=2) and pred.copy(quantity=3).quantity == 3
    assert type(pred.copy()) is Order and pickle.loads(pickle.dumps(pred)) == pred
    again = program(Order(text="two pens"), lm=lm)  # the inputs as one instance, with per-call options
    assert type(again) is Order and [c.kwargs.get("n", 1) for c in lm.calls] == [1, 1]
    cot = sf.ChainOfThought(Order, lm=ScriptedLM(['{"reasoning": "two", "item": "pen", "quantity": 2}']))
    thought = cot(text="two pens")
    assert type(thought) is Order and thought["reasoning"] == "two"
    assert type(sf.Predict("text -> item", lm=ScriptedLM(['{"item": "x"}']))(text="x")) is sf.Prediction


def test_positional_inputs_other_than_a_signature_instance_say_what_to_write() -> None:
    example = sf.Example(text="two pens").with_inputs("text")
    with pytest.raises(sf.InputError, match=r"program\(\*\*example.inputs\(\)\)"):
        sf.Predict(Order, lm=_lm())(example)
    assert sf.Predict(Order, lm=_lm())(**example.inputs()).quantity == 2


def test_dspy_spellings_name_sigforms() -> None:
    with pytest.raises(AttributeError, match=r"did you mean `to_dict\(\)`"):
        sf.Prediction(a=1).toDict()
    with pytest.raises(AttributeError, match=r"did you mean `to_dict\(\)`"):
        sf.Example(a=1).toDict()
    for name in ("with_inputs", "inputs", "labels"):
        with pytest.raises(AttributeError, match=r"Example methods: sf.Example\(pred.to_dict\(\)\)"):
            getattr(sf.Prediction(a=1), name)
    assert sf.Prediction(inputs=1).inputs == 1  # a field of that name is still read


def test_a_demo_with_a_wrong_value_is_an_error_naming_the_demo_and_the_field() -> None:
    demos = [
        {"text": "a pen", "item": "pen", "quantity": 1},
        {"text": "pens", "item": "pen", "quantity": "many"},
    ]
    with pytest.raises(sf.InputError) as err:
        sf.Predict(Order, demos=demos)
    assert "demo #1, output `quantity` expects int, got str 'many'" in str(err.value)
    with pytest.raises(sf.InputError, match="demo #0, output `quantity` expects int, got bool True"):
        sf.Predict(Order, demos=[{"text": "a", "quantity": True}])


def test_a_demo_key_the_signature_lacks_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(sf.InputError, match=r"demo #0 has a field `qty` .* \(did you mean `quantity`\?\)"):
        sf.Predict(Order, demos=[{"text": "two pens", "item": "pen", "qty": 2}])
    program = sf.Predict(Order)
    with pytest.raises(sf.InputError, match="`qty`"):
        program.demos = [sf.Example(text="x", qty=2)]
    assert program.demos == []


def test_an_incomplete_demo_stays_allowed_and_lossless_values_pass() -> None:
    program = sf.Predict(Order, demos=[{"text": "a pen", "item": "pen"}, {"text": "3 pens", "quantity": "3"}])
    assert [d.to_dict() for d in program.demos][1] == {"text": "3 pens", "quantity": "3"}  # kept as given
    sf.Predict(Order, demos=[{"text": "x", "item": None, "quantity": None}])
