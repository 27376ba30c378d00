"""The fast chat header scan finds exactly what the lenient header pattern finds (issue 13, item 2).

``find_headers`` searches for the literal ``[[`` core and adds the optional bold in front itself,
so a 1 MB run of ``[`` is one substring search instead of a pattern attempt at every character.
The reference below is the pattern it replaced, run by the ``regex`` engine at every position.
"""

from __future__ import annotations

import re

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sigform.adapters import chat_scan
from sigform.adapters.chat_scan import HEADER_RE, find_headers, find_sections, has_header
from sigform.adapters.names import FieldMatcher

REFERENCE_RE = regex.compile(
    r"(?:\*\*|__)?\[\[[ \t]*+\#{1,3}[ \t]*+(?P<name>[^\[\]\#\n]{1,100}?)"
    r"[ \t]*+\#{1,3}[ \t]*+\]\](?:\*\*|__)?[ \t]*+:?"
)

# the characters a header is made of, plus a little prose, so that near-headers are frequent
_PIECES = st.sampled_from(
    ["[[", "[", "]]", "]", "#", "##", " ", "\t", "\n", "**", "*", "__", "_", ":", "a", "n", "`"]
)
TEXTS = st.lists(_PIECES, max_size=60).map("".join)


def spans_of(matches: list[re.Match[str]]) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group("name")) for m in matches]


def reference(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group("name")) for m in REFERENCE_RE.finditer(text)]


@settings(max_examples=3000, deadline=None)
@given(TEXTS)
def test_find_headers_matches_the_reference_pattern(text: str) -> None:
    assert spans_of(find_headers(text)) == reference(text)
    assert [(m.start(), m.end(), m.group("name")) for m in HEADER_RE.finditer(text)] == reference(text)
    assert has_header(text) == (REFERENCE_RE.search(text) is not None)


def test_bold_headers_start_at_the_bold_unless_the_previous_header_took_it() -> None:
    text = "**[[ ## a ## ]]**[[ ## n ## ]]x__[[## a##]]:"
    assert spans_of(find_headers(text)) == reference(text)
    assert [m.start() for m in find_headers(text)] == [0, 17, 31]  # the first closing bold is its own


def test_a_run_of_brackets_has_no_header_and_no_section() -> None:
    text = "[" * 200_000 + "[[ ## answer ## ]] 42"
    matcher = FieldMatcher(["answer"])
    assert spans_of(find_headers(text)) == reference(text)
    assert find_sections(text, matcher).values == {"answer": "42"}
    assert not has_header("[" * 200_000) and find_sections("[" * 200_000, matcher).headers == 0


# the label patterns as they were, names `[\w \-]{0,60}?`: blank runs after a label rescanned per length
_OLD_NAME = r"(?P<name>[A-Za-z][\w \-]{0,60}?)"
OLD_LABEL_RE = regex.compile(
    r"^[ \t]*+(?:(?:[-*+]|\d{1,3}[.)])[ \t]++)?+(?:\#{1,6}[ \t]*+)?+(?:\*\*|__)?+[ \t]*+"
    + _OLD_NAME
    + r"[ \t]*+(?:(?:\*\*|__)[ \t]*+:|:[ \t]*+(?:\*\*|__)|:)[ \t]*+",
    regex.MULTILINE,
)
OLD_HEADING_RE = regex.compile(
    r"^[ \t]*+(?:\#{1,6}[ \t]*+" + _OLD_NAME + r"|(?:\*\*|__)[ \t]*+" + _OLD_NAME
    + r"[ \t]*+(?:\*\*|__))[ \t]*+$",
    regex.MULTILINE,
)
_LABEL_PIECES = st.sampled_from(
    [" ", "  ", "\t", "\n", "a", "B", "x1", "-", "_", "**", "__", ":", "#", "## ", "1.", "- ", "*", "é"]
)
LABEL_TEXTS = st.lists(_LABEL_PIECES, max_size=50).map("".join)


def spans(pattern: regex.Pattern[str], text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group("name")) for m in pattern.finditer(text)]


@settings(max_examples=3000, deadline=None)
@given(LABEL_TEXTS)
def test_label_patterns_read_the_same_names_as_before(text: str) -> None:
    assert spans(chat_scan._LABEL_RE, text) == spans(OLD_LABEL_RE, text)
    assert spans(chat_scan._HEADING_RE, text) == spans(OLD_HEADING_RE, text)


def test_long_label_names_and_names_with_blanks_are_read_as_before() -> None:
    texts = ("final answer  :  42", "**a" + "b" * 60 + "**: x", "a" + " b" * 30 + ": x", "## Final Answer \n")
    for text in texts:
        assert spans(chat_scan._LABEL_RE, text) == spans(OLD_LABEL_RE, text)
        assert spans(chat_scan._HEADING_RE, text) == spans(OLD_HEADING_RE, text)
