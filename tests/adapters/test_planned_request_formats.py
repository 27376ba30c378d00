"""The JSON adapter's response formats are a typed field of the planned request
(``PlannedCall.formats``), never control entries riding in the LM keyword arguments (issue 16 item 3)."""

from __future__ import annotations

import datetime as dt

import pytest

import sigform as sf
from sigform.adapters.call_loop import run_loop
from sigform.adapters.call_plan import AdapterCall, CallPlan, ResponseFormats
from sigform.adapters.json_adapter import forget_step_downs
from sigform.lm.interface import Completion
from sigform.testing import ScriptedLM


class Invoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    total: float = sf.OutputField()
    due: dt.date = sf.OutputField()


INPUTS = {"text": "Acme bills twelve dollars"}
BAD_CHAT = "[[ ## total ## ]]\nabout twelve\n\n[[ ## due ## ]]\nsoon\n\n[[ ## completed ## ]]"


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> None:
    forget_step_downs()


def answer(text: str) -> list[Completion]:
    return [Completion(text=text)]


def test_the_json_adapter_plans_its_response_formats_outside_the_lm_keyword_arguments() -> None:
    lm = ScriptedLM([], features={"json_schema", "json_object"})
    adapter = sf.JSONAdapter()
    call = AdapterCall(lm, Invoice, [], INPUTS, {"temperature": 0})
    kwargs = adapter.request_kwargs(call, Invoice)
    assert kwargs == {"temperature": 0}
    plan = CallPlan(run_loop(adapter, call))
    request = plan.request
    assert request is not None and request.formats is not None
    assert request.formats.signature is Invoice and request.formats.modes[0] == "json_schema"
    assert request.kwargs["response_format"]["type"] == "json_schema"
    assert not [k for k in request.kwargs if k.startswith("__")]
    plan.reply(answer('{"total": 12.0, "due": "2025-05-01"}'))
    assert plan.result.outputs == [{"total": 12.0, "due": dt.date(2025, 5, 1)}]
    assert not [k for k in plan.result.request_kwargs if k.startswith("__")]


def test_a_caller_s_response_format_means_no_planned_formats() -> None:
    lm = ScriptedLM([], features={"json_schema"})
    given = {"response_format": {"type": "json_object"}}
    assert sf.JSONAdapter().response_formats(lm, Invoice, given) is None
    assert sf.ChatAdapter().response_formats(lm, Invoice, {}) is None


def test_a_constrained_retry_plans_the_schema_of_the_failing_fields_only() -> None:
    lm = ScriptedLM([], features={"stop", "json_object"})
    plan = CallPlan(run_loop(sf.ChatAdapter(), AdapterCall(lm, Invoice, [], INPUTS)))
    assert plan.request is not None and plan.request.formats is None
    plan.reply(answer(BAD_CHAT))
    retry = plan.request
    assert retry is not None and isinstance(retry.formats, ResponseFormats)
    assert retry.formats.modes == ("json_object_schema",)
    assert list(retry.formats.signature.output_fields) == ["total", "due"]
    assert not [k for k in retry.kwargs if k.startswith("__")]
    assert retry.kwargs["response_format"]["type"] == "json_object"
