"""Label and fence stripping are linear in the text (issue 27, finding 1).

Before the fix, ``"a" + " " * 4000 + "b: 1"`` into an ``int`` field cost 7-8 s: the patterns that
strip an echoed ``answer:`` label backtracked over the blank run around their optional ``**``,
and the code-fence pattern's lazy body retried the blank run before the closing fence (100 KB:
12-14 s). The scans that replaced them are checked two ways: against the old patterns on short
text (same answers), and on long pathological text under a generous cap that only catches
quadratic behaviour (the speed figures are in benchmarks/adversarial_parse.py).
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import time
from typing import Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import sigform as sf
from sigform.errors import FieldValueError, ParseError
from sigform.testing import ScriptedLM
from sigform.types import coerce
from sigform.types.coercion._choices import _ANY_LABEL_WORDS
from sigform.types.coercion._collections import _key_line
from sigform.types.coercion._records import yaml_key
from sigform.types.coercion._text import split_label, strip_fence, strip_label, unwrap_quotes

CAP_SECONDS = 3.0  # linear work on 100 KB takes milliseconds; the old patterns took minutes

# ---- the old patterns, kept here as the reference for short text --------------------------------

_OLD_LABEL = re.compile(r"\A\**\s*([A-Za-z][\w \-]{0,60}?)\s*\**\s*[:=]\s*\**\s*(.*)\Z", re.S)
_OLD_ANY_LABEL = re.compile(r"\A[*_]*\s*([A-Za-z][A-Za-z ]{0,40}?)\s*[*_]*\s*:\s*[*_]*\s*(.+?)\Z", re.S)
_OLD_YAML_KEY = re.compile(
    r"\A(?:[-*\u2022]\s+)?\**\s*([A-Za-z_][\w \-]{0,60}?)\s*(?:\*\*)?\s*"
    r":(?:\*\*)?(?:\s+|\Z)(?:\*\*\s*)?(.*)\Z",
    re.S,
)
_OLD_KEY_LINE = re.compile(r"\A(?:[-*\u2022+]\s+)?(.+?)\s*[:=]\s*(.*)\Z", re.S)
_OLD_FENCE = re.compile(r"\A```[^\n`]*\n(.*?)\n?[ \t]*```\Z", re.S)

_TEXT = st.text(alphabet="aZ1_-é *:=\t\n•+`x", max_size=24)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_split_label_reads_what_the_old_pattern_read(text: str) -> None:
    old = _OLD_LABEL.match(text)
    new = split_label(text)
    assert (new is None) == (old is None)
    if old and new:
        assert new[0] == old.group(1).rstrip() and new[1] == old.group(2)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_choice_label_reads_what_the_old_pattern_read(text: str) -> None:
    old = _OLD_ANY_LABEL.match(text)
    new = split_label(text, ":", "*_", _ANY_LABEL_WORDS)
    # an empty rest reads as no choice either way (the old pattern refused it, or took one blank or
    # star for the value)
    if new is not None and not new[1].strip("*_ \t\n"):
        return
    assert (new is None) == (old is None)
    if old and new:
        assert new[0] == old.group(1).rstrip() and new[1].strip() == old.group(2).strip()


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_yaml_key_reads_what_the_old_pattern_read(text: str) -> None:
    old = _OLD_YAML_KEY.match(text)
    new = yaml_key(text)
    assert (new is None) == (old is None)
    if old and new:
        assert new == (old.group(1).strip(), old.group(2))


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_dict_key_line_reads_what_the_old_pattern_read(text: str) -> None:
    old = _OLD_KEY_LINE.match(text)
    new = _key_line(text)
    assert (new is None) == (old is None)
    if old and new:
        assert (new[0].strip(), new[1].strip()) == (old.group(1).strip(), old.group(2).strip())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="`a \t\n", max_size=24))
def test_strip_fence_reads_what_the_old_pattern_read(text: str) -> None:
    old = _OLD_FENCE.match(text) if text.startswith("```") else None
    assert strip_fence(text) == (old.group(1).strip() if old else text)


def _old_unwrap_quotes(text: str) -> str:
    pairs = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
    while len(text) >= 2:
        first = text[0]
        if first in pairs and text[-1] == pairs[first]:
            inner = text[1:-1]
            if first in "\"'" and first in inner:
                return text
            text = inner.strip()
        elif text.startswith("**") and text.endswith("**") and len(text) > 4:
            text = text[2:-2].strip()
        else:
            return text
    return text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="\"'`* a\u201c\u201d\n\t", max_size=30))
def test_unwrap_quotes_reads_what_the_old_loop_read(text: str) -> None:
    assert unwrap_quotes(text) == _old_unwrap_quotes(text)


def test_labels_and_fences_still_come_off() -> None:
    assert strip_label("**Answer:** 42", "answer") == "42"
    assert strip_label("answer = 42", "answer") == "42"
    assert strip_label("Other: 42", "answer") == "Other: 42"
    assert strip_fence('```json\n{"a": 1}\n  ```') == '{"a": 1}'
    assert strip_fence("```\n```") == ""
    assert strip_fence("````") == "````"
    assert coerce("Final answer: B", Literal["A", "B"]) == "B"


# ---- long pathological text: every typed value, and through an adapter -------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    name: str
    count: int


TYPES: list[Any] = [
    int,
    float,
    bool,
    dt.date,
    Optional[int],
    Literal["yes", "no"],
    Color,
    list[int],
    Item,
    dict[str, int],
    tuple[int, int],
]


def _shapes(n: int) -> dict[str, str]:
    blanks = " " * n
    return {
        "letter, blanks, label": "a" + blanks + "b: 1",
        "stars, blanks, label": "**" + blanks + "b: 1",
        "label, blanks, stars": "answer" + blanks + "**" + blanks + ": 1",
        "bullet, blanks, key": "- " + blanks + "x" + blanks + ": 1",
        "key, blanks, no colon": "a" + blanks + "b",
        "fence, blanks": "```\n" + blanks + "x```",
        "fence, blank lines": "```\n" + "\n " * (n // 2) + "x```",
        "label, tabs": "answer" + "\t" * n + "x:",
        "underscores": "_" + " _" * (n // 2) + ": 1",
        # each layer of quotes/bold was peeled by copying the rest: quadratic in the layers
        "stars": "*" * n,
        "backtick lines": "```\n" * (n // 4),
    }


@pytest.mark.parametrize("annotation", TYPES, ids=lambda t: getattr(t, "__name__", str(t)))
def test_label_and_fence_shapes_coerce_in_bounded_time(annotation: Any) -> None:
    for shape, text in _shapes(100_000).items():
        t0 = time.process_time()
        try:
            coerce(text, annotation, field="answer")
        except FieldValueError:
            pass
        spent = time.process_time() - t0
        assert spent < CAP_SECONDS, f"{annotation} on {shape!r}: {spent:.1f} s"


def test_a_blank_run_in_a_predicted_int_is_read_in_bounded_time() -> None:
    sig = sf.make_signature({"text": (str, sf.InputField()), "n": (int, sf.OutputField())})
    for shape, value in _shapes(100_000).items():
        lm = ScriptedLM(lambda *a, v=value, **k: "[[ ## n ## ]]\n" + v + "\n[[ ## completed ## ]]")
        program = sf.Predict(sig, lm=lm, adapter=sf.ChatAdapter())
        t0 = time.process_time()
        with pytest.raises(ParseError):
            program(text="t")
        spent = time.process_time() - t0
        assert spent < CAP_SECONDS, f"{shape!r}: {spent:.1f} s"
