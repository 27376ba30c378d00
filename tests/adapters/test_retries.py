"""Retries that can change the answer (issue 12): failing values are asked again under a schema
that constrains exactly the failing fields where the LM can constrain decoding; no request
identical to one already sent; an empty chat answer never falls back to an unconstrained JSON
request."""

from __future__ import annotations

import datetime as dt
import json
from typing import Literal

import pytest

import sigform as sf
from sigform.adapters.json_adapter import forget_step_downs
from sigform.adapters.repair import DATE_PATTERN, constrained_schema
from sigform.errors import BadRequestError, FieldValueError, StructureError
from sigform.lm.interface import Completion
from sigform.testing import ScriptedLM


class Invoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    vendor: str = sf.OutputField()
    total: float = sf.OutputField()
    due: dt.date = sf.OutputField()
    currency: Literal["USD", "EUR"] = sf.OutputField()


BAD = (
    "[[ ## vendor ## ]]\nAcme\n\n[[ ## total ## ]]\nabout twelve\n\n[[ ## due ## ]]\nsoon\n\n"
    "[[ ## currency ## ]]\nUSD\n\n"
)
INPUTS = {"text": "Acme bills twelve dollars"}


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> None:
    forget_step_downs()


def test_failing_values_are_retried_under_a_schema_of_exactly_those_fields() -> None:
    lm = ScriptedLM([BAD, '{"total": 12.0, "due": "2025-05-01"}'], features={"stop", "json_object"})
    result = sf.ChatAdapter().run(lm, Invoice, [], INPUTS)
    assert result.outputs == [
        {"vendor": "Acme", "total": 12.0, "due": dt.date(2025, 5, 1), "currency": "USD"}
    ]
    retry = lm.calls[1]
    fmt = retry.kwargs["response_format"]
    assert fmt["type"] == "json_object"
    assert list(fmt["schema"]["properties"]) == ["total", "due"]
    assert fmt["schema"]["properties"]["total"] == {"type": "number"}
    assert fmt["schema"]["properties"]["due"] == {"type": "string", "pattern": DATE_PATTERN}
    assert "stop" not in retry.kwargs  # the chat marker means nothing to a JSON answer
    assert retry.messages[-2] == {"role": "assistant", "content": BAD}
    assert '"total", "due"' in retry.messages[-1]["content"]
    assert result.attempts == 2


def test_strict_json_schema_mode_is_used_when_supported() -> None:
    lm = ScriptedLM([BAD, '{"total": 12, "due": "2025-05-01"}'], features={"stop", "json_schema"})
    sf.ChatAdapter().run(lm, Invoice, [], INPUTS)
    fmt = lm.calls[1].kwargs["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert set(fmt["json_schema"]["schema"]["required"]) == {"total", "due"}


def test_literal_fields_are_constrained_as_enum() -> None:
    schema = constrained_schema({"currency": Literal["USD", "EUR"], "when": dt.date | None})
    assert schema["properties"]["currency"]["enum"] == ["USD", "EUR"]
    assert {"type": "string", "pattern": DATE_PATTERN} in schema["properties"]["when"]["anyOf"]


def test_a_failed_constrained_retry_is_the_last_request() -> None:
    lm = ScriptedLM(
        [BAD, '{"total": 12, "due": "2025-02-30"}', "never sent"], features={"stop", "json_object"}
    )
    with pytest.raises(FieldValueError) as info:
        sf.ChatAdapter(max_reasks=3).run(lm, Invoice, [], INPUTS)
    assert len(lm.calls) == 2
    assert info.value.fields == ["due"]


def test_rejected_constrained_modes_end_the_retry_with_the_value_error() -> None:
    lm = ScriptedLM([BAD, BadRequestError("no response_format here")], features={"stop", "json_object"})
    with pytest.raises(FieldValueError) as info:
        sf.ChatAdapter().run(lm, Invoice, [], INPUTS)
    assert set(info.value.fields) == {"total", "due"}


def test_without_a_constraint_a_reask_identical_to_a_sent_request_is_not_sent() -> None:
    # the re-ask gets the same answer back (temperature 0): asking that again is byte-identical
    lm = ScriptedLM([BAD, BAD, "never sent"], features={"stop"})
    with pytest.raises(FieldValueError):
        sf.ChatAdapter(max_reasks=3).run(lm, Invoice, [], INPUTS)
    assert len(lm.calls) == 2
    assert "response_format" not in lm.calls[1].kwargs


def test_empty_chat_answer_does_not_fall_back_to_unconstrained_json() -> None:
    lm = ScriptedLM([Completion("", finish_reason="stop"), "never sent"], features={"stop"})
    with pytest.raises(StructureError):
        sf.ChatAdapter().run(lm, Invoice, [], INPUTS)
    assert len(lm.calls) == 1


def test_empty_chat_answer_falls_back_to_constrained_json() -> None:
    answer = json.dumps({"vendor": "Acme", "total": 12, "due": "2025-05-01", "currency": "USD"})
    lm = ScriptedLM([Completion("", finish_reason="stop"), answer], features={"stop", "json_object"})
    result = sf.ChatAdapter().run(lm, Invoice, [], INPUTS)
    assert result.adapter_names == ["ChatAdapter", "JSONAdapter"]
    assert lm.calls[1].kwargs["response_format"]["type"] == "json_object"
    assert result.outputs[0]["total"] == 12.0


def test_json_adapter_schema_writes_dates_as_a_pattern() -> None:
    schema = sf.JSONAdapter().strict_schema(Invoice)
    assert schema["properties"]["due"] == {"type": "string", "pattern": DATE_PATTERN}
