"""Every request carries what ends generation with the answer (issue 12): XML sends the closing
tag of its last output as a stop sequence and puts it back before parsing; a nested element of
the same name turns the stop off rather than cut the answer."""

from __future__ import annotations

import datetime as dt

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
    assert lm.calls[0].kwargs["stop"] == ["</total>"]
    assert result.outputs == [{"vendor": "Acme", "total": 12.5}]
    assert result.completions[0].text.endswith("<total>12.5</total>")


def test_xml_stop_on_nested_model_ends_after_the_first_block() -> None:
    text = (
        "<event><title>Jazz Night</title><date>2025-06-14</date>"
        "<venue><name>Blue Note</name><city>Chicago</city></venue>"
    )
    lm = ScriptedLM([Completion(text, finish_reason="stop")])
    result = sf.XMLAdapter().run(lm, Extract, [], {"text": "..."})
    assert lm.calls[0].kwargs["stop"] == ["</event>"]
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
