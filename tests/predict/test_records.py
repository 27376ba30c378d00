"""Example and Prediction: attribute/item access, reserved-safe API, copies, display."""

from __future__ import annotations

import copy
import pickle

import pytest

from sigform.lm.interface import Completion, Usage
from sigform.predict import Completions, Example, Prediction, PredictionMeta, majority
from sigform.predict.example import as_examples


def test_example_attribute_and_item_access() -> None:
    ex = Example(question="2+2?", answer="4")
    assert ex.question == "2+2?"
    assert ex["answer"] == "4"
    assert "question" in ex and "nope" not in ex
    assert list(ex) == ["question", "answer"]
    assert len(ex) == 2
    with pytest.raises(AttributeError, match="no field 'nope'"):
        _ = ex.nope
    with pytest.raises(KeyError):
        _ = ex["nope"]


def test_fields_named_like_mapping_methods_are_values_not_methods() -> None:
    # items/values/get read as the field when there is one; keys() is always the method (what
    # ``**ex`` and ``dict(ex)`` call), so a field named keys is read by item
    ex = Example(items=["a", "b"], keys="k", values=3, get="g")
    assert ex.items == ["a", "b"] and Example.items(ex) == ex.to_dict().items()
    assert ex["keys"] == "k" and ex.values == 3 and ex.get == "g"
    assert dict(ex) == {**ex} == ex.to_dict() and list(ex.keys()) == ["items", "keys", "values", "get"]
    plain = Example(question="2+2", answer=4).with_inputs("question")
    assert dict(**plain.inputs()) == {"question": "2+2"} and plain.get("answer") == 4
    pred = Prediction(items=[1], inputs="x")
    assert pred.items == [1] and pred.inputs == "x"


def test_example_from_dict_and_set_values() -> None:
    ex = Example({"a": 1}, b=2)
    ex.c = 3
    ex["d"] = 4
    assert ex.to_dict() == {"a": 1, "b": 2, "c": 3, "d": 4}
    del ex.c
    del ex["d"]
    assert ex.to_dict() == {"a": 1, "b": 2}
    assert ex == {"a": 1, "b": 2}


def test_with_inputs_marks_inputs_and_labels() -> None:
    ex = Example(question="q", context="c", answer="a").with_inputs("question", "context")
    assert ex.to_dict("inputs") == {"question": "q", "context": "c"}
    assert ex.to_dict("labels") == {"answer": "a"}
    assert ex.to_dict() == {"question": "q", "context": "c", "answer": "a"}
    with pytest.raises(KeyError, match=r"no field .questoin. \(did you mean .question.\?\)"):
        ex.with_inputs("questoin")
    with pytest.raises(ValueError, match="no input keys marked"):
        Example(a=1).to_dict("inputs")


def test_example_copy_is_independent_and_keeps_inputs() -> None:
    ex = Example(q="x", a="y").with_inputs("q")
    other = ex.copy(a="z")
    assert other.a == "z" and ex.a == "y"
    assert other.to_dict("inputs") == {"q": "x"}
    assert ex != Example(q="x", a="y")  # input marking is part of an Example's identity


def test_examples_deepcopy_and_pickle() -> None:
    ex = Example(q=["x"], a="y").with_inputs("q")
    deep = copy.deepcopy(ex)
    deep.q.append("z")
    assert ex.q == ["x"]
    assert pickle.loads(pickle.dumps(ex)) == ex
    pred = Prediction(answer="Paris", _meta=PredictionMeta(raw="raw text", usage=Usage(1, 2)))
    back = pickle.loads(pickle.dumps(pred))
    assert back == pred and back._raw == "raw text" and back._usage.total_tokens == 3


def test_as_examples_accepts_dicts_and_rejects_single_items() -> None:
    items = as_examples([{"a": 1}, Example(a=2)])
    assert all(isinstance(i, Example) for i in items)
    assert [i.a for i in items] == [1, 2]
    with pytest.raises(TypeError, match="list of examples"):
        as_examples({"a": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an Example or a dict"):
        as_examples([42])  # type: ignore[list-item]


def test_prediction_metadata_is_behind_underscore_names() -> None:
    meta = PredictionMeta(
        raw="[[ ## answer ## ]]\nParis", usage=Usage(10, 5), adapter="ChatAdapter", attempts=2
    )
    pred = Prediction(answer="Paris", _meta=meta)
    assert pred.answer == "Paris"
    assert pred._raw.startswith("[[ ## answer")
    assert pred._usage.total_tokens == 15
    assert pred._meta.adapter == "ChatAdapter" and pred._meta.attempts == 2
    assert pred.to_dict() == {"answer": "Paris"}  # metadata is not a field


def test_completions_list_candidates_and_fields() -> None:
    cands = [Prediction(answer=a, score=i) for i, a in enumerate(["x", "y", "z"])]
    pred = Prediction.from_candidates(cands)
    assert pred.answer == "x"
    comps = pred.completions
    assert isinstance(comps, Completions) and len(comps) == 3
    assert comps.answer == ["x", "y", "z"]
    assert comps["score"] == [0, 1, 2]
    assert comps[1].answer == "y"
    with pytest.raises(AttributeError):
        _ = comps.nope
    single = Prediction(answer="only")
    assert len(single.completions) == 1 and single.completions.answer == ["only"]


def test_prediction_copy_keeps_meta_and_candidates() -> None:
    cands = [Prediction(a=1, _meta=PredictionMeta(raw="r1")), Prediction(a=2)]
    pred = Prediction.from_candidates(cands)
    other = pred.copy(a=5)
    assert other.a == 5 and pred.a == 1
    assert other._raw == "r1" and len(other.completions) == 2


def test_repr_and_notebook_and_rich_display() -> None:
    from rich.console import Console

    ex = Example(question="<b>q</b>", answer="a").with_inputs("question")
    assert repr(ex) == "Example(question='<b>q</b>', answer='a', [inputs: question])"
    html = ex._repr_html_()
    assert "&lt;b&gt;q&lt;/b&gt;" in html and "<b>q</b>" not in html  # values are escaped
    assert "input" in html and "label" in html
    pred = Prediction(
        answer="Paris",
        _meta=PredictionMeta(adapter="ChatAdapter", usage=Usage(3, 4), completion=Completion("x"), model="m"),
    )
    assert repr(pred) == "Prediction(answer='Paris')"
    assert "adapter=ChatAdapter" in pred._repr_html_() and "tokens=7" in pred._repr_html_()
    console = Console(record=True, width=80)
    console.print(pred)
    text = console.export_text()
    assert "answer" in text and "Paris" in text and "model=m" in text


def test_majority_over_predictions_and_completions() -> None:
    preds = [Prediction(answer=a) for a in ["Paris", "paris.", "Lyon", " PARIS "]]
    winner = majority(preds, "answer")
    assert winner.answer == "Paris"  # the first of the winning group, unnormalised
    multi = Prediction.from_candidates([Prediction(answer=a) for a in ["b", "a", "a"]])
    assert majority(multi).answer == "a"  # default field: the last one
    assert majority([{"x": [1, 2]}, {"x": [1, 2]}, {"x": [3]}], "x").x == [1, 2]  # unhashable values vote
    tie = majority([Prediction(answer="b"), Prediction(answer="a")], "answer")
    assert tie.answer == "b"  # ties go to the first seen
    assert majority([Prediction(v=1), Prediction(v=None), Prediction(v=None)], "v").v == 1  # None abstains


def test_majority_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        majority([])
    with pytest.raises(KeyError, match="no field 'answer'"):
        majority([Prediction(x=1)], "answer")
    exact = majority([Prediction(a="A"), Prediction(a="a"), Prediction(a="a")], "a", normalize=None)
    assert exact.a == "a"
