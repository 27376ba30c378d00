"""sf.evaluate: typed per-field scores, failures by kind, usage, intervals, leaks, exports."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.evaluation import Comparison, LabelLeakWarning, MetricErrorWarning, compare, score_of
from sigform.evaluation.stats import paired_difference
from sigform.lm.interface import Usage
from sigform.predict import Example, Predict, track_usage
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


SIG = "question -> answer: int, kind: Literal['math', 'geo']"


def scripted(answers: dict[str, Any], usage: dict[str, int] | None = None) -> ScriptedLM:
    usage = usage or {"prompt_tokens": 10, "completion_tokens": 3}

    def reply(text: str) -> Any:
        for key, value in answers.items():
            if key in text:
                return value if isinstance(value, Exception) else {"text": value, "usage": usage}
        return sf.ProviderError("no scripted answer")

    return ScriptedLM.by_input(reply)


# -- Example.inputs() / labels() ------------------------------------------------------------------


def test_example_inputs_and_labels() -> None:
    ex = Example(question="2+2?", answer="4", note="easy").with_inputs("question")
    assert ex.inputs() == Example(question="2+2?").with_inputs("question")
    assert ex.inputs().to_dict("inputs") == {"question": "2+2?"}
    assert ex.labels().to_dict() == {"answer": "4", "note": "easy"}
    with pytest.raises(ValueError, match="with_inputs"):
        Example(question="q").inputs()


def test_a_field_named_labels_is_not_shadowed_by_the_method() -> None:
    ex = Example(text="t", labels=["a", "b"]).with_inputs("text")
    assert ex.labels == ["a", "b"]  # the field, like every field
    assert Example.labels(ex).to_dict() == {"labels": ["a", "b"]}  # the method stays reachable


# -- typed comparison --------------------------------------------------------------------------------


class Address(BaseModel):
    city: str
    zip: str


class Person(BaseModel):
    name: str
    age: int
    address: Address


def test_compare_scalars_and_literals_exactly() -> None:
    assert compare(" Paris ", "Paris", str) == 1.0
    assert compare("paris", "Paris", str) == 0.0
    assert compare("paris", "Paris", str, Comparison(case_sensitive=False)) == 1.0
    assert compare(4, 4, int) == 1.0 and compare(5, 4, int) == 0.0
    assert compare(True, 1, int) == 0.0  # a bool never matches a number
    assert compare("geo", "geo", Literal["math", "geo"]) == 1.0
    assert compare(None, None, int | None) == 1.0 and compare(None, 3, int | None) == 0.0


def test_compare_dates_from_json_gold() -> None:
    assert compare(dt.date(2024, 3, 1), "2024-03-01", dt.date) == 1.0
    assert compare(dt.date(2024, 3, 2), "2024-03-01", dt.date) == 0.0


def test_compare_floats_with_tolerance() -> None:
    assert compare(12.5, 12.50000000001, float) == 1.0
    assert compare(12.51, 12.5, float) == 0.0
    assert compare(12.51, 12.5, float, Comparison(float_tolerance=0.02)) == 1.0
    with pytest.raises(ValueError, match="float_tolerance"):
        Comparison(float_tolerance=-1)


def test_compare_lists_by_multiset_f1_and_sets_by_set_f1() -> None:
    assert compare(["b", "a"], ["a", "b"], list[str]) == 1.0  # order ignored
    assert compare(["a", "x"], ["a", "b"], list[str]) == pytest.approx(0.5)
    assert compare(["a", "a"], ["a"], list[str]) == pytest.approx(2 / 3)  # duplicates count
    assert compare(["a", "a"], ["a"], set[str]) == 1.0
    assert compare([], [], list[str]) == 1.0 and compare([], ["a"], list[str]) == 0.0


def test_compare_nested_models_per_leaf() -> None:
    gold = {"name": "Ada", "age": 36, "address": {"city": "London", "zip": "N1"}}
    wrong_city = Person(name="Ada", age=36, address=Address(city="Paris", zip="N1"))
    assert compare(wrong_city, gold, Person) == pytest.approx(0.75)  # 3 of 4 leaves
    assert compare(Person.model_validate(gold), gold, Person) == 1.0


# -- intervals -----------------------------------------------------------------------------------------


def test_wilson_interval_for_binary_scores() -> None:
    score = score_of([1.0] * 8 + [0.0] * 2)
    assert score == 0.8 and score.method == "Wilson" and score.n == 10
    assert score.low == pytest.approx(0.4902, abs=1e-3) and score.high == pytest.approx(0.9433, abs=1e-3)
    perfect = score_of([1.0] * 5)
    assert perfect.high == 1.0 and perfect.low < 0.6  # 5 of 5 is not certainty


def test_bootstrap_interval_is_seeded_and_contains_the_mean() -> None:
    values = [0.5, 0.75, 1.0, 0.25, 1.0, 0.0, 0.5]
    first, second = score_of(values), score_of(values)
    assert first.method == "bootstrap" and (first.low, first.high) == (second.low, second.high)
    assert first == pytest.approx(sum(values) / 7) and first.low < first < first.high
    diff = paired_difference([1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0])
    assert diff == 0.5 and diff.low <= 0.5 <= diff.high


# -- evaluate -------------------------------------------------------------------------------------------


DEV = [
    {"question": "2+2", "answer": 4, "kind": "math"},
    {"question": "3+3", "answer": 6, "kind": "math"},
    {"question": "capital", "answer": 8, "kind": "geo"},
    {"question": "boom", "answer": 1, "kind": "math"},
]


def program() -> Predict:
    lm = scripted({
        "Your previous answer": chat(answer="six", kind="math"),
        "2+2": chat(answer=4, kind="math"),
        "3+3": chat(answer="six", kind="math"),  # never an int, even when asked again
        "capital": chat(answer=7, kind="geo"),
        "boom": sf.ProviderError("server down"),
    })
    return Predict(SIG, lm=lm)


def test_failures_are_counted_by_kind_and_score_zero() -> None:
    result = sf.evaluate(program(), DEV, progress=False)
    assert [r.status for r in result.records] == ["ok", "parse_error", "ok", "error"]
    assert result.parse_errors == 1 and result.errors == 1 and result.metric_errors == 0
    assert result.score == pytest.approx((1.0 + 0 + 0.5 + 0) / 4)
    assert result.answered_score == pytest.approx(0.75)
    assert result.field_accuracy["answer"] == pytest.approx(0.25)
    assert result.field_accuracy["kind"] == pytest.approx(0.5)
    parse = result.records[1]
    assert parse.raw and "six" in parse.raw[0]  # the raw completion is kept
    assert "ProviderError" in (result.records[3].error or "")


def test_failed_calls_still_count_their_tokens() -> None:
    # a parse failure made two requests (the answer and one re-ask): both count
    result = sf.evaluate(program(), DEV[1:2], progress=False)
    record = result.records[0]
    assert record.status == "parse_error"
    assert record.calls == 2 and record.prompt_tokens == 20 and record.completion_tokens == 6
    with track_usage() as tracker, pytest.raises(sf.ParseError):
        program()(question="3+3")
    assert tracker.requests == 2 and tracker.usage.completion_tokens == 6


def test_a_metric_that_raises_is_reported_not_swallowed() -> None:
    def metric(example: Example, pred: Any) -> bool:
        if example.question == "capital":
            raise KeyError("oops")
        return pred.answer == example.answer

    with pytest.warns(MetricErrorWarning, match=r"1 of 4 .*KeyError.*oops.*test_evaluate.py"):
        result = sf.evaluate(program(), DEV, metric, progress=False)
    bad = result.records[2]
    assert bad.status == "metric_error" and bad.score is None and "KeyError" in (bad.error or "")
    assert result.score.n == 3 and result.score == pytest.approx(1 / 3)  # left out, not a zero
    assert "METRIC ERRORS" in str(result)


def test_a_metric_must_return_a_number() -> None:
    with pytest.warns(MetricErrorWarning, match="bool or a finite number"):
        result = sf.evaluate(program(), DEV[:1], lambda ex, pred: "yes", progress=False)
    assert result.records[0].status == "metric_error"


def test_custom_metric_scores_and_typed_field_accuracy_is_still_reported() -> None:
    result = sf.evaluate(program(), DEV[:1] + DEV[2:3], lambda ex, pred: pred.kind == ex.kind, progress=False)
    assert result.score == 1.0 and result.score.method == "Wilson"
    assert result.field_accuracy["answer"] == 0.5


def test_cache_hits_are_reported(lm_server: Any, isolated_cache: Any) -> None:
    lm_server.reply = lambda body, headers: __import__("lm_fake_openai").Reply(
        body=__import__("lm_fake_openai").completion_body([chat(answer=4, kind="math")])
    )
    lm = sf.LM("openai/fake", api_base=lm_server.api_base, api_key="k", num_retries=0)
    qa = Predict(SIG, lm=lm)
    first = sf.evaluate(qa, DEV[:1], progress=False)
    again = sf.evaluate(qa, DEV[:1], progress=False)
    assert first.cache_hits == 0 and first.calls == 1
    assert again.cache_hits == 1 and again.records[0].cache_hit
    assert "1 from cache" in str(again)


def test_labels_in_the_prompt_are_a_warned_leak() -> None:
    qa = program()
    qa.demos = [DEV[0]]
    with pytest.warns(LabelLeakWarning, match="1 of 2 devset examples are demos"):
        result = sf.evaluate(qa, DEV[:1] + DEV[2:3], progress=False)
    assert result.leaks == 1 and "LABEL LEAK" in str(result)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sf.evaluate(qa, DEV[2:3], progress=False)  # held out: no warning


def test_exports_and_displays() -> None:
    result = sf.evaluate(program(), DEV, progress=False)
    records = result.to_records()
    assert records[0]["prediction"] == {"answer": 4, "kind": "math"} and records[1]["status"] == "parse_error"
    payload = json.loads(result.to_json())
    assert payload["summary"]["parse_errors"] == 1 and len(payload["records"]) == 4
    assert payload["summary"]["score"]["low"] <= payload["summary"]["score"]["value"]
    page = result._repr_html_()
    assert "worst examples" in page and "parse_error" in page and "raw: " in page and "six" in page
    from rich.console import Console

    console = Console(record=True, width=140)
    console.print(result)
    assert "field accuracy" in console.export_text()


def test_compare_needs_the_same_devset() -> None:
    a = sf.evaluate(program(), DEV, progress=False)
    b = sf.evaluate(program(), DEV, lambda ex, pred: True, progress=False)
    diff = b.compare(a)
    assert diff == pytest.approx(((1 - 1) + 0 + (1 - 0.5) + 0) / 4) and diff.method == "paired bootstrap"
    with pytest.raises(ValueError, match="same devset"):
        b.compare(sf.evaluate(program(), DEV[:2], progress=False))


def test_unmarked_examples_need_a_signature_to_split() -> None:
    class Wrapper(sf.Module):
        def __init__(self) -> None:
            self.inner = program()

        def forward(self, question: str) -> Any:
            return self.inner(question=question)

    with pytest.raises(ValueError, match="with_inputs"):
        sf.evaluate(Wrapper(), DEV[:1], progress=False)
    marked = [Example(d).with_inputs("question") for d in DEV[:1]]
    assert sf.evaluate(Wrapper(), marked, progress=False).score == 1.0


def test_usage_tracker_counts_requests_and_cache_hits() -> None:
    with track_usage() as tracker:
        from sigform.predict import context_vars

        context_vars.add_usage(Usage(prompt_tokens=5, cache_hit=True), 2)
        context_vars.add_usage(Usage(prompt_tokens=1))
    assert tracker.requests == 3 and tracker.cache_hits == 2 and tracker.usage.prompt_tokens == 6


# -- aevaluate / Evaluate ---------------------------------------------------------------------------


def _comparable(result: Any) -> list[tuple[Any, ...]]:
    return [
        (r.index, r.status, r.score, r.prediction, r.calls, r.prompt_tokens, r.completion_tokens, r.raw)
        for r in result.records
    ]


async def test_aevaluate_scores_like_evaluate_on_the_event_loop() -> None:
    sync = sf.evaluate(program(), DEV, progress=False)
    result = await sf.aevaluate(program(), DEV, progress=False)
    assert _comparable(result) == _comparable(sync)
    assert result.score == pytest.approx(sync.score) and result.field_accuracy == sync.field_accuracy
    assert result.parse_errors == 1 and result.errors == 1


async def test_aevaluate_bounds_the_calls_in_flight() -> None:
    import asyncio

    in_flight = peak = 0

    async def reply(text: str) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return {"text": chat(answer=4, kind="math"), "usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    qa = Predict(SIG, lm=ScriptedLM.by_input(reply))
    devset = [{"question": f"q{i}", "answer": 4, "kind": "math"} for i in range(12)]
    result = await sf.aevaluate(qa, devset, concurrency=3, progress=False)
    assert result.score == 1.0 and result.n == 12
    assert peak == 3  # the tasks really overlap, and never more than asked


async def test_aevaluate_reports_a_raising_metric() -> None:
    def metric(example: Example, pred: Any) -> bool:
        raise RuntimeError("bad metric")

    with pytest.warns(MetricErrorWarning, match="RuntimeError.*bad metric"):
        result = await sf.aevaluate(program(), DEV[:1], metric, progress=False)
    assert result.records[0].status == "metric_error" and result.records[0].score is None


async def test_aevaluate_cancellation_propagates() -> None:
    import asyncio

    async def slow(text: str) -> Any:
        await asyncio.sleep(30)
        return {"text": chat(answer=4, kind="math")}

    qa = Predict(SIG, lm=ScriptedLM.by_input(slow))
    task = asyncio.ensure_future(sf.aevaluate(qa, DEV[:2], progress=False))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # not turned into an "error" record


async def test_evaluate_object_binds_devset_and_metric() -> None:
    evaluator = sf.Evaluate(DEV, lambda ex, pred: pred.kind == ex.kind, progress=False)
    result = evaluator(program())
    assert result.score == pytest.approx(2 / 4) and result.metric.endswith("<lambda>")
    again = await evaluator.acall(program())
    assert _comparable(again) == _comparable(result)
    with pytest.raises(dataclasses_frozen_error()):
        evaluator.metric = None  # type: ignore[misc]


def dataclasses_frozen_error() -> type[Exception]:
    import dataclasses

    return dataclasses.FrozenInstanceError
