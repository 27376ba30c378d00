"""Every request carries what ends generation with the answer (issue 12): XML sends the closing
tag of its last output (and its self-closing forms) as stop sequences and puts the one that fired
back before parsing; a nested element of the same name turns the stop off rather than cut the
answer."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.lm.interface import Completion
from sigform.testing import ScriptedLM


class Venue(BaseModel):
    name: str
    city: str


class Event(BaseModel):
    title: str
    date: dt.date
    venue: Venue


class Extract(sf.Signature):
    """Extract the event."""

    text: str = sf.InputField()
    event: Event = sf.OutputField()


class Invoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    vendor: str = sf.OutputField()
    total: float = sf.OutputField()


def test_xml_sends_last_closing_tag_as_stop_and_restores_it() -> None:
    # what a server returns when the stop sequence fired: everything before `</total>`
    lm = ScriptedLM([Completion("<vendor>Acme</vendor>\n<total>12.5", finish_reason="stop")])
    result = sf.XMLAdapter().run(lm, Invoice, [], {"text": "Acme bills 12.50"})
    assert lm.calls[0].kwargs["stop"] == ["</total>", "total/>", "total />"]
    assert result.outputs == [{"vendor": "Acme", "total": 12.5}]
    assert result.completions[0].text.endswith("<total>12.5</total>")


def test_xml_stop_on_nested_model_ends_after_the_first_block() -> None:
    text = (
        "<event><title>Jazz Night</title><date>2025-06-14</date>"
        "<venue><name>Blue Note</name><city>Chicago</city></venue>"
    )
    lm = ScriptedLM([Completion(text, finish_reason="stop")])
    result = sf.XMLAdapter().run(lm, Extract, [], {"text": "..."})
    assert lm.calls[0].kwargs["stop"] == ["</event>", "event/>", "event />"]
    assert result.outputs[0]["event"].venue.city == "Chicago"


def test_xml_answer_closed_by_the_model_is_left_alone() -> None:
    lm = ScriptedLM([Completion("<vendor>Acme</vendor><total>3</total>", finish_reason="stop")])
    result = sf.XMLAdapter().run(lm, Invoice, [], {"text": "x"})
    assert result.completions[0].text == "<vendor>Acme</vendor><total>3</total>"


class Person(BaseModel):
    name: str


def test_xml_no_stop_when_a_nested_element_has_the_last_fields_name() -> None:
    class Sig(sf.Signature):
        """x"""

        text: str = sf.InputField()
        person: Person = sf.OutputField()
        name: str = sf.OutputField()

    lm = ScriptedLM(["<person><name>A</name></person><name>B</name>"])
    sf.XMLAdapter().run(lm, Sig, [], {"text": "x"})
    assert "stop" not in lm.calls[0].kwargs


def test_xml_without_stop_support_sends_none_and_use_stop_false_turns_it_off() -> None:
    lm = ScriptedLM(["<vendor>A</vendor><total>1</total>"], features={"json_object"})
    sf.XMLAdapter().run(lm, Invoice, [], {"text": "x"})
    assert "stop" not in lm.calls[0].kwargs
    lm = ScriptedLM(["<vendor>A</vendor><total>1</total>"])
    sf.XMLAdapter(use_stop=False).run(lm, Invoice, [], {"text": "x"})
    assert "stop" not in lm.calls[0].kwargs


class DueInvoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    vendor: str = sf.OutputField()
    due_date: dt.date | None = sf.OutputField()


def test_xml_self_closing_last_field_stops_and_reads_as_null() -> None:
    # the 270M model writes a null last field as `<due_date/>`: the stop `due_date/>` fires and the
    # server returns the text up to it, which ends with the `<` that only this stop leaves
    lm = ScriptedLM([Completion("<vendor>Acme</vendor>\n<", finish_reason="stop")])
    result = sf.XMLAdapter().run(lm, DueInvoice, [], {"text": "Acme, no due date"})
    assert lm.calls[0].kwargs["stop"] == ["</due_date>", "due_date/>", "due_date />"]
    assert result.outputs == [{"vendor": "Acme", "due_date": None}]
    assert result.completions[0].text == "<vendor>Acme</vendor>\n<due_date/>"


def test_xml_answer_ended_by_the_model_before_its_last_field_is_not_read_as_null() -> None:
    # the model's own end (no `<` left) is not our stop: the missing field stays an error
    lm = ScriptedLM([Completion("<vendor>Acme</vendor>\n", finish_reason="stop")] * 3)
    with pytest.raises(sf.StructureError, match="due_date"):
        sf.XMLAdapter(max_reasks=0).run(lm, DueInvoice, [], {"text": "Acme"})


def test_xml_value_ending_in_a_bracket_is_closed_not_self_closed() -> None:
    lm = ScriptedLM([Completion("<vendor>Acme</vendor><note>a <", finish_reason="stop")])

    class Noted(sf.Signature):
        """x"""

        text: str = sf.InputField()
        vendor: str = sf.OutputField()
        note: str = sf.OutputField()

    result = sf.XMLAdapter().run(lm, Noted, [], {"text": "x"})
    assert result.completions[0].text.endswith("<note>a <</note>")


def test_xml_no_self_closing_stop_when_another_name_ends_with_the_last_one() -> None:
    class Dates(sf.Signature):
        """x"""

        text: str = sf.InputField()
        invoice_date: dt.date | None = sf.OutputField()
        date: dt.date | None = sf.OutputField()

    lm = ScriptedLM(["<invoice_date/><date>2025-01-02</date>"])
    sf.XMLAdapter().run(lm, Dates, [], {"text": "x"})
    assert lm.calls[0].kwargs["stop"] == ["</date>"]
