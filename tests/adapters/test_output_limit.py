"""The default output limit (issue 17, items 1 and 2): requests from an LM with no ``max_tokens``
get one derived from the signature, and a length stop says what happened and what to do."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Literal

import pytest

import sigform as sf
from sigform.adapters.output_limit import (
    OutputLimit,
    default_output_limit,
    repeated_tail,
    resolve_output_limit,
)
from tests.lm_fake_openai import FakeOpenAIServer, Reply, completion_body

QA = sf.make_signature("question -> answer, confidence: float")
LOOP = "[[ ## answer ## ]]\n" + "[[ 500 - $112.14]] " * 40
PARIS = "[[ ## answer ## ]]\nParis\n[[ ## confidence ## ]]\n0.9\n[[ ## completed ## ]]"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def _lm(server: FakeOpenAIServer, **kw) -> sf.LM:
    return sf.LM("openai/fake-model", api_base=server.api_base, api_key="k", cache=False, num_retries=0, **kw)


def _answer(text: str, finish: str = "stop") -> Reply:
    return Reply(body=completion_body([text], finish_reason=finish))


def test_default_limit_follows_the_outputs() -> None:
    assert default_output_limit(sf.make_signature("q -> ok: bool")) == 32 + 24
    assert default_output_limit(QA) == 32 + 256 + 24
    assert default_output_limit(sf.make_signature("text -> items: list[str], n: int")) == 32 + 512 + 24


def test_a_request_without_a_limit_gets_the_default(server: FakeOpenAIServer) -> None:
    server.queue.append(_answer(PARIS))
    pred = sf.Predict(QA, lm=_lm(server))(question="Capital of France?")
    assert pred.answer == "Paris"
    assert server.requests[0]["max_tokens"] == default_output_limit(QA)


@pytest.mark.parametrize(
    ("lm_kw", "program_kw", "sent"),
    [({"max_tokens": 60}, {}, 60), ({}, {"max_tokens": 70}, 70), ({"max_tokens": None}, {}, None)],
)
def test_your_limit_wins_and_none_sends_none(server: FakeOpenAIServer, lm_kw, program_kw, sent) -> None:
    server.queue.append(_answer(PARIS))
    sf.Predict(QA, lm=_lm(server, **lm_kw), **program_kw)(question="Capital of France?")
    assert server.requests[0].get("max_tokens") == sent


def test_scripted_models_get_no_default() -> None:
    from sigform.testing import ScriptedLM

    lm = ScriptedLM(["[[ ## answer ## ]]\nx\n[[ ## confidence ## ]]\n1\n[[ ## completed ## ]]"])
    sf.Predict(QA, lm=lm)(question="q")
    assert "max_tokens" not in lm.last_kwargs


def test_a_loop_is_called_a_loop(server: FakeOpenAIServer) -> None:
    server.queue.append(_answer(LOOP, finish="length"))
    with pytest.raises(sf.ParseError) as info:
        sf.Predict(QA, lm=_lm(server))(question="Refund?")
    message = str(info.value)
    assert "repetition loop" in message and "[[ 500 - $112.14]]" in message
    assert f"max_tokens={default_output_limit(QA)}" in message
    assert "would not help" in message
    assert info.value.raw == LOOP  # the raw text is kept


def test_the_default_limit_is_named(server: FakeOpenAIServer) -> None:
    cut = "[[ ## answer ## ]]\nThe capital of France is a city with a long history and many"
    server.queue.append(_answer(cut, finish="length"))
    with pytest.raises(sf.ParseError) as info:
        sf.Predict(QA, lm=_lm(server))(question="Capital?")
    message = str(info.value)
    assert "sigform's default output limit" in message
    assert f"max_tokens={default_output_limit(QA)}" in message
    assert "repetition" not in message


def test_your_limit_is_named(server: FakeOpenAIServer) -> None:
    cut = "[[ ## answer ## ]]\nThe capital of France is a city with a long history and many"
    server.queue.append(_answer(cut, finish="length"))
    with pytest.raises(sf.ParseError) as info:
        sf.Predict(QA, lm=_lm(server, max_tokens=60))(question="Capital?")
    message = str(info.value)
    assert "your output limit (max_tokens=60" in message and "raise max_tokens" in message
    assert "default" not in message


def test_a_reask_cut_off_names_the_default_limit(server: FakeOpenAIServer) -> None:
    # the value re-ask (no constrained decoding on this endpoint) carries the same default limit,
    # so a length stop on it is explained as the default limit, not the provider's
    bad = "[[ ## answer ## ]]\nParis\n[[ ## confidence ## ]]\nvery high\n[[ ## completed ## ]]"
    cut = "[[ ## answer ## ]]\nThe capital of France is a city with a long history and many"
    server.queue.extend([_answer(bad), _answer(cut, finish="length")])
    lm = _lm(server, capabilities={"json_schema": False, "json_object": False})
    with pytest.raises(sf.ParseError) as info:
        sf.Predict(QA, lm=lm, adapter=sf.ChatAdapter(fallback=False))(question="Capital?")
    assert len(server.requests) == 2
    assert server.requests[1]["max_tokens"] == default_output_limit(QA)
    message = str(info.value)
    assert "sigform's default output limit" in message and "no max_tokens was sent" not in message


def test_no_limit_sent_names_the_provider(server: FakeOpenAIServer) -> None:
    cut = "[[ ## answer ## ]]\nThe capital of France is a city with a long history and many"
    server.queue.append(_answer(cut, finish="length"))
    with pytest.raises(sf.ParseError) as info:
        sf.Predict(QA, lm=_lm(server, max_tokens=None))(question="Capital?")
    assert "no max_tokens was sent" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog. " * 3 + "Then it ran home and slept until noon.",
        "[[ ## answer ## ]]\n1. apples\n2. pears\n3. plums\n4. figs\n5. dates",
        "- a\n- b\n- c",
        "",
    ],
)
def test_ordinary_text_is_no_loop(text: str) -> None:
    assert repeated_tail(text) is None


def test_loops_are_found_whatever_the_period() -> None:
    assert repeated_tail("ha" * 100) == ("ha", 100)
    unit, times = repeated_tail("Answer: " + "the same sentence again and again. " * 12)  # type: ignore[misc]
    assert unit == "the same sentence again and again." and times >= 11


def test_the_embedded_model_is_bounded_for_the_readme_and_notebook_programs() -> None:
    """Item 11: the README's first example and the quickstart notebook set no max_tokens; the
    embedded model's requests are bounded by the default all the same."""
    class ExtractExpense(sf.Signature):
        """Extract the expense record from the note."""

        text: str = sf.InputField()
        payee: str = sf.OutputField()
        amount_usd: float = sf.OutputField()
        date: datetime.date = sf.OutputField()
        category: Literal["meals", "travel", "office", "software"] = sf.OutputField()

    local = sf.LM("local", temperature=0)  # built, not started: the route resolves on the first call
    assert resolve_output_limit(local, QA, {}) == OutputLimit(312, "default")
    assert resolve_output_limit(local, ExtractExpense, {}) == OutputLimit(360, "default")
    root = Path(__file__).resolve().parents[2]
    for path in [root / "README.md", *sorted((root / "notebooks").glob("*.ipynb"))]:
        code = path.read_text(encoding="utf-8").replace("`max_tokens=None`", "")  # the docs may name it
        assert "max_tokens=None" not in code, path


def test_a_long_echo_of_the_prompt_is_a_loop() -> None:
    # what Gemma 3 270M wrote on a refund ticket: its prompt's last turn, over and over
    echo = (
        "mendatanguser\n[[ ## ticket ## ]]\nRefund request: order 500 was billed $112.14 twice, plus "
        "$112.14 shipping.\n\nRespond with the output fields `amounts`, `total_usd`, in this order, each "
        "under its own header, and end with the completed marker. "
    )
    found = repeated_tail("[[ ## amounts ## ]]\n" + echo * 3 + echo[:50])
    assert found is not None and found[1] == 3 and "Refund request" in found[0]
    assert repeated_tail(echo * 2) is None  # twice is not yet a loop
