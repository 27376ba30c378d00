"""A constrained first answer may write numbers and dates as the text does (issue 12).

Under a JSON number grammar the embedded model's `$2,450.00` became `2`: it writes the digits it
reads, and the comma that follows is the grammar's key separator, so a wrong value validated. Under
the date pattern it wrote null for `May 1, 2025`. The first request now lets both be strings of
their written forms, which the parser reads under the parse policy or refuses; a retry of a
refused value uses the strict schema."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

import sigform as sf
from sigform.adapters.json_adapter import forget_step_downs
from sigform.adapters.repair import (
    DATE_PATTERN,
    DATE_TEXT_PATTERN,
    NUMBER_TEXT_PATTERN,
    constrained_schema,
)
from sigform.testing import ScriptedLM


class Venue(BaseModel):
    name: str
    capacity: int | None = None


class Invoice(sf.Signature):
    """Extract the invoice."""

    text: str = sf.InputField()
    total: float = sf.OutputField()
    currency: Literal["USD", "EUR"] = sf.OutputField()
    due: dt.date | None = sf.OutputField()


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> None:
    forget_step_downs()


def test_first_request_takes_numbers_and_dates_as_written_and_keeps_enums() -> None:
    answer = '{"total": "$2,450.00", "currency": "USD", "due": "May 1, 2025"}'
    lm = ScriptedLM([answer], features={"json_object"})
    result = sf.JSONAdapter().run(lm, Invoice, [], {"text": "Acme: $2,450.00 due May 1, 2025"})
    assert result.outputs == [{"total": 2450.0, "currency": "USD", "due": dt.date(2025, 5, 1)}]
    props = lm.calls[0].kwargs["response_format"]["schema"]["properties"]
    assert props["total"] == {"type": "string", "pattern": NUMBER_TEXT_PATTERN}
    assert props["currency"] == {"type": "string", "enum": ["USD", "EUR"]}
    assert props["due"] == {"anyOf": [{"type": "string", "pattern": DATE_TEXT_PATTERN}, {"type": "null"}]}
    assert "__lenient__" not in lm.calls[0].kwargs  # a driver hint, never sent


def test_a_refused_written_value_is_retried_under_the_strict_schema() -> None:
    # `01/02/2025` is ambiguous: the parser refuses it (never a guess), and the retry for that
    # field alone asks for YYYY-MM-DD
    first = '{"total": "12", "currency": "USD", "due": "01/02/2025"}'
    lm = ScriptedLM([first, '{"due": "2025-02-01"}'], features={"json_object"})
    result = sf.JSONAdapter().run(lm, Invoice, [], {"text": "x"})
    assert result.outputs == [{"total": 12.0, "currency": "USD", "due": dt.date(2025, 2, 1)}]
    retry = lm.calls[1].kwargs["response_format"]["schema"]["properties"]
    assert retry == {"due": {"anyOf": [{"type": "string", "pattern": DATE_PATTERN}, {"type": "null"}]}}


def test_listed_numbers_are_lenient_nullable_ones_not_and_the_strict_form_is_unchanged() -> None:
    annotations = {"venue": Venue, "prices": list[float]}
    lenient = constrained_schema(annotations, lenient=True)
    venue = lenient["properties"]["venue"]
    # a nullable number stays a number: offered a quoted one or null, the model wrote null
    assert venue["properties"]["capacity"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert lenient["properties"]["prices"]["items"] == {"type": "string", "pattern": NUMBER_TEXT_PATTERN}
    bounded = constrained_schema({"confidence": Annotated[float, Field(ge=0, le=1)]}, lenient=True)
    assert bounded["properties"]["confidence"]["type"] == "number"  # a score keeps its bounds
    strict = constrained_schema(annotations)
    assert strict["properties"]["prices"]["items"] == {"type": "number"}
    assert strict["properties"]["venue"]["properties"]["capacity"]["anyOf"][0] == {"type": "integer"}


@pytest.mark.parametrize("text", ["2450", "2,450.00", "$2,450.00", "¥15,000", "-3.5", "1,000"])
def test_number_pattern_takes_the_written_forms(text: str) -> None:
    assert re.fullmatch(NUMBER_TEXT_PATTERN.strip("^$"), text)


@pytest.mark.parametrize("text", ["", "about twelve", "12 dollars", "1" * 40, "$"])
def test_number_pattern_refuses_words_and_runaway_digits(text: str) -> None:
    assert not re.fullmatch(NUMBER_TEXT_PATTERN.strip("^$"), text)


@pytest.mark.parametrize("text", ["May 1, 2025", "12 February 2025", "2025-04-15", "Jan 31, 2026"])
def test_date_pattern_takes_the_written_forms(text: str) -> None:
    assert re.fullmatch(DATE_TEXT_PATTERN.strip("^$"), text)


def test_the_lenient_schema_makes_a_grammar_llama_cpp_can_parse() -> None:
    # llama-cpp-python's schema-to-grammar port copies `\d` and `\.` of a pattern into the
    # grammar, whose parser knows neither escape: its server died on such a request. The
    # patterns use character classes; no escape but those GBNF knows may reach the grammar.
    from llama_cpp import llama_grammar as grammar  # the local extra, installed with dev tests
    known = set('xuUtrn\\"[]')

    def unknown_escapes(schema: dict[str, object]) -> set[str]:
        gbnf = grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)._grammar
        return set(re.findall(r"\\(.)", gbnf)) - known

    lenient = constrained_schema({"total": float, "due": dt.date | None, "venue": Venue}, lenient=True)
    assert unknown_escapes(lenient) == set()
    assert unknown_escapes({"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$"}) == {"."}  # the check works
