"""Fuzzing the parsers with damaged real-looking completions (held-out set and development corpus).

Each example takes one case's completion and damages it a few times (cut, drop, insert markup,
duplicate, change case, swap in odd characters). Whatever comes out, ``parse`` must either raise
:class:`~sigform.errors.ParseError` or return exactly the output fields with values valid for
their types. Internal errors of the value engine are re-raised, not wrapped, so a bug shows up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from corpus_grading import (
    ADAPTERS,
    CORPUS,
    CORPUS_ABSENT,
    CORPUS_SKIP_REASON,
    load_cases,
    load_types,
    signature_for,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

import sigform.types.coercion as coercion
from sigform.errors import ParseError

pytestmark = pytest.mark.skipif(CORPUS_ABSENT, reason=CORPUS_SKIP_REASON)

EXAMPLES = int(os.environ.get("SF_EXAMPLES", "200"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPES = load_types() if (CORPUS / "types.py").exists() else None
CASES: list[dict[str, Any]] = []
if TYPES is not None:
    CASES = load_cases(Path(__file__).with_name("heldout_cases.jsonl"))
    if (CORPUS / "cases.jsonl").exists():
        CASES += load_cases(CORPUS / "cases.jsonl")

TOKENS = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    ",",
    ":",
    "\n",
    "\n\n",
    "<",
    ">",
    "</",
    "/>",
    "<item>",
    "</item>",
    "[[ ## ",
    " ## ]]",
    "[[ ## completed ## ]]",
    "```",
    "```json\n",
    "**",
    "# ",
    "- ",
    "1. ",
    "a) ",
    "&",
    "&amp;",
    "&#",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "null",
    "None",
    "true",
    "\\",
    "\\u00",
    "\u2212",
    "\u00a0",
    "\ufeff",
    "\u201c",
    "%",
    "$",
    "e+",
    "1,000",
    "\t",
    "\r\n",
]


def _mutate(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        op = data.draw(st.sampled_from(["cut", "drop", "insert", "dup", "case", "swap"]), label="op")
        i = data.draw(st.integers(0, len(text)), label="at")
        j = min(len(text), i + data.draw(st.integers(1, 12), label="span"))
        if op == "cut":
            text = text[:i]
        elif op == "drop":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + data.draw(st.sampled_from(TOKENS), label="token") + text[i:]
        elif op == "dup":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "case":
            text = text[:i] + text[i:j].swapcase() + text[j:]
        else:
            text = text[:i] + data.draw(st.sampled_from(TOKENS), label="token") + text[j:]
    return text


@pytest.fixture(autouse=True)
def _surface_internal_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coercion, "_RERAISE_INTERNAL", True)


@pytest.mark.skipif(not CASES, reason="no cases")
@SETTINGS
@given(st.data())
def test_damaged_completions_raise_only_parse_errors(data: st.DataObject) -> None:
    case = data.draw(st.sampled_from(CASES), label="case")
    adapter = ADAPTERS[data.draw(st.sampled_from([case["format"], "chat", "json", "xml"]), label="adapter")]
    outputs = TYPES.outputs_spec(case)
    text = _mutate(case["completion"], data)
    try:
        got = adapter.parse(signature_for(outputs), text)
    except ParseError:
        return
    assert list(got) == list(outputs)
    for name, annotation in outputs.items():
        TypeAdapter(annotation).validate_python(got[name])  # a returned value is always a valid one
