"""BestOfN and Refine: rollouts with distinct ids, reward selection, thresholds, logged failures."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import sigform as sf
from sigform.predict import BestOfN, Predict, Refine
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def scores_lm(values: list[Any]) -> ScriptedLM:
    return ScriptedLM([v if isinstance(v, Exception) else chat(answer=v) for v in values])


def reward(inputs: dict[str, Any], pred: Any) -> float:
    return float(len(pred.answer))


def test_best_of_n_picks_the_highest_reward_with_distinct_rollouts() -> None:
    lm = scores_lm(["ab", "abcd", "a"])
    best = BestOfN(Predict("question -> answer", lm=lm), N=3, reward_fn=reward)
    assert best(question="q").answer == "abcd"
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [0, 1, 2]
    assert all(c.kwargs["temperature"] == 1.0 for c in lm.calls)


def test_threshold_stops_early() -> None:
    lm = scores_lm(["a", "abc", "abcdef"])
    best = BestOfN(Predict("question -> answer", lm=lm), N=3, reward_fn=reward, threshold=3)
    assert best(question="q").answer == "abc"
    assert len(lm.calls) == 2


def test_temperature_can_be_left_alone_and_explicit_config_wins() -> None:
    lm = scores_lm(["a", "b"])
    prog = Predict("question -> answer", lm=lm, temperature=0.3)
    BestOfN(prog, N=2, reward_fn=reward, temperature=None)(question="q")
    assert [c.kwargs["temperature"] for c in lm.calls] == [0.3, 0.3]
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [0, 1]


def test_outside_best_of_n_no_rollout_id_is_sent() -> None:
    lm = scores_lm(["a"])
    Predict("question -> answer", lm=lm)(question="q")
    assert "rollout_id" not in lm.last_kwargs


def test_failures_are_logged_never_printed(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    lm = scores_lm([sf.ProviderError("flaky"), "abc"])
    with caplog.at_level(logging.WARNING, logger="sigform.predict"):
        pred = BestOfN(Predict("question -> answer", lm=lm), N=2, reward_fn=reward)(question="q")
    assert pred.answer == "abc"
    assert any("attempt 1/2 failed" in r.getMessage() and "flaky" in r.getMessage() for r in caplog.records)
    captured = capsys.readouterr()
    assert "flaky" not in captured.out + captured.err


def test_too_many_failures_raise_the_last_error() -> None:
    lm = scores_lm([sf.ProviderError("one"), sf.ProviderError("two"), "abc"])
    best = BestOfN(Predict("question -> answer", lm=lm), N=3, reward_fn=reward, fail_count=2)
    with pytest.raises(sf.ProviderError, match="two"):
        best(question="q")
    every = BestOfN(Predict("question -> answer", lm=scores_lm([sf.ProviderError("x")] * 2)), 2, reward)
    with pytest.raises(sf.ProviderError):
        every(question="q")


def test_a_bad_reward_value_counts_as_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    lm = scores_lm(["a", "b"])
    best = BestOfN(Predict("question -> answer", lm=lm), N=2, reward_fn=lambda i, p: "high", fail_count=5)
    with (
        caplog.at_level(logging.WARNING, logger="sigform.predict"),
        pytest.raises(sf.SigformError, match="number"),
    ):
        best(question="q")
    assert len(caplog.records) == 2


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        BestOfN(Predict("a -> b"), N=0, reward_fn=reward)
    with pytest.raises(TypeError, match="callable"):
        BestOfN(Predict("a -> b"), N=1, reward_fn=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        Refine(Predict("a -> b"), N=1, reward_fn=reward, threshold=None)  # type: ignore[arg-type]


def test_refine_tells_the_next_attempt_what_went_wrong() -> None:
    lm = scores_lm(["a", "abcd"])
    refine = Refine(Predict("question -> answer", lm=lm), N=3, reward_fn=reward, threshold=4)
    assert refine(question="q").answer == "abcd"
    assert len(lm.calls) == 2
    first_system = lm.calls[0].messages[0]["content"]
    second_system = lm.calls[1].messages[0]["content"]
    assert "previous attempt" not in first_system
    assert "A previous attempt at this task fell short" in second_system
    assert "{'answer': 'a'}" in second_system and "scored 1" in second_system


def test_refine_uses_reward_feedback() -> None:
    lm = scores_lm(["short", "a much longer answer"])

    def judged(inputs: dict[str, Any], pred: Any) -> tuple[float, str]:
        return len(pred.answer) / 10, "Write a longer answer."

    Refine(Predict("question -> answer", lm=lm), N=2, reward_fn=judged, threshold=1.0)(question="q")
    assert "Write a longer answer." in lm.calls[1].messages[0]["content"]


def test_refine_returns_best_when_threshold_never_reached() -> None:
    lm = scores_lm(["abc", "a"])
    assert (
        Refine(Predict("question -> answer", lm=lm), N=2, reward_fn=reward, threshold=10)(question="q").answer
        == "abc"
    )


def test_async_best_of_n() -> None:
    lm = scores_lm(["ab", "abcde", "a"])
    best = BestOfN(Predict("question -> answer", lm=lm), N=3, reward_fn=reward)
    assert asyncio.run(best.acall(question="q")).answer == "abcde"
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [0, 1, 2]


def test_inner_predictors_are_visible_for_saving() -> None:
    best = BestOfN(Predict("question -> answer"), N=2, reward_fn=reward)
    assert [name for name, _ in best.named_predictors()] == ["module"]
