"""AutoAdapter, the default: constrained JSON where the LM constrains decoding to a schema, chat
sections elsewhere; the choice shows in pred._meta.adapter and an explicit adapter overrides it."""

from __future__ import annotations

import datetime as dt

import pytest

import sigform as sf
from sigform.adapters.json_adapter import forget_step_downs
from sigform.errors import BadRequestError
from sigform.predict.predict import default_adapter
from sigform.testing import ScriptedLM


class Invoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    vendor: str = sf.OutputField()
    due: dt.date = sf.OutputField()


JSON_ANSWER = '{"vendor": "Acme", "due": "2025-05-01"}'
CHAT_ANSWER = "[[ ## vendor ## ]]\nAcme\n\n[[ ## due ## ]]\n2025-05-01\n\n[[ ## completed ## ]]"


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> None:
    forget_step_downs()


def test_default_adapter_is_auto() -> None:
    assert isinstance(default_adapter(), sf.AutoAdapter)


def test_constrained_json_where_the_lm_constrains_decoding() -> None:
    lm = ScriptedLM([JSON_ANSWER], features={"stop", "json_object"})
    pred = sf.Predict(Invoice, lm=lm)(text="Acme, due May 1")
    assert pred.due == dt.date(2025, 5, 1) and pred._meta.adapter == "JSONAdapter"
    fmt = lm.calls[0].kwargs["response_format"]
    assert fmt["type"] == "json_object" and list(fmt["schema"]["properties"]) == ["vendor", "due"]


def test_chat_sections_elsewhere() -> None:
    lm = ScriptedLM([CHAT_ANSWER], features={"stop"})
    pred = sf.Predict(Invoice, lm=lm)(text="Acme, due May 1")
    assert pred.vendor == "Acme" and pred._meta.adapter == "ChatAdapter"
    assert lm.calls[0].kwargs["stop"] == ["[[ ## completed ## ]]"]
    assert "response_format" not in lm.calls[0].kwargs


def test_an_explicit_adapter_overrides_the_choice() -> None:
    lm = ScriptedLM([CHAT_ANSWER], features={"stop", "json_object"})
    pred = sf.Predict(Invoice, lm=lm, adapter=sf.ChatAdapter())(text="x")
    assert pred._meta.adapter == "ChatAdapter" and "response_format" not in lm.calls[0].kwargs


def test_an_endpoint_that_refused_every_json_mode_gets_chat() -> None:
    lm = ScriptedLM(
        [BadRequestError("no schema"), BadRequestError("no json"), CHAT_ANSWER, CHAT_ANSWER],
        features={"stop", "json_object"},
    )
    adapter = sf.AutoAdapter()
    assert adapter.choose(lm) == "JSONAdapter"
    first = sf.Predict(Invoice, lm=lm, adapter=adapter)(text="x")  # steps down to plain text
    assert first.vendor == "Acme"
    assert adapter.choose(lm) == "ChatAdapter"
    assert sf.Predict(Invoice, lm=lm, adapter=adapter)(text="x")._meta.adapter == "ChatAdapter"


def test_stream_parser_reads_either_format() -> None:
    parser = sf.AutoAdapter().stream_parser(Invoice)
    deltas = parser.feed(JSON_ANSWER) + parser.finish()
    assert {d.field for d in deltas if d.done} == {"vendor", "due"}
    parser = sf.AutoAdapter().stream_parser(Invoice)
    deltas = parser.feed(CHAT_ANSWER) + parser.finish()
    assert [d.text_so_far for d in deltas if d.done and d.field == "vendor"] == ["Acme"]


def test_the_demo_uses_the_default_adapter() -> None:
    from sigform.cli import demo

    program = demo.build_program(lm=ScriptedLM([]))
    assert isinstance(program.adapter, sf.AutoAdapter)


def test_the_real_model_suite_measures_the_default() -> None:
    from benchmarks.real_suite.run import ALL_PROGRAMS
    from benchmarks.real_suite.sigform_side import make_adapter

    assert isinstance(make_adapter("auto"), sf.AutoAdapter) and "sigform:auto" in ALL_PROGRAMS
