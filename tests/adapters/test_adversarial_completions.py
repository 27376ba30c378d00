"""Garbled completions: every parse is linear in the text (issue 13, item 2).

The patterns are the benchmark's (``benchmarks/adversarial_parse.py``). No timing is asserted
beyond a generous cap that only catches quadratic behaviour: before the fix a 10 KB run of ``{``
took 27-36 s to parse, a 10 KB ``<a>`` nesting with stray close tags 6-8 s.
"""

from __future__ import annotations

import time

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.adversarial_parse import PATTERNS, parsers
from sigform.adapters.brace_scan import MAX_TOKENS, object_spans
from sigform.adapters.xml_scan import MAX_DEPTH, scan
from sigform.errors import ParseError

CAP_SECONDS = 3.0  # a linear parse of 30 KB takes milliseconds; a quadratic one takes seconds or more


@pytest.fixture(scope="module")
def funcs() -> dict:
    return parsers()


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_garbled_text_parses_in_bounded_time(pattern: str, funcs: dict) -> None:
    text = PATTERNS[pattern](30_000)
    for name, parse in funcs.items():
        t0 = time.process_time()
        with pytest.raises(ParseError):
            parse(text)
        spent = time.process_time() - t0
        assert spent < CAP_SECONDS, f"{name} on {pattern!r}: {spent:.1f} s"


def test_cut_off_json_of_5_mb_is_a_parse_error_not_memory_error(funcs: dict) -> None:
    text = '{"answer": "' + "lorem ipsum " * 440_000  # 5.3 MB, cut inside the string
    for name, parse in funcs.items():
        with pytest.raises(ParseError) as info:
            parse(text)
        assert "answer" in str(info.value), name


def test_deep_json_nesting_is_refused_with_a_reason(funcs: dict) -> None:
    text = '{"answer": ' + "[" * 5_000 + "1" + "]" * 5_000 + ', "n": 1,}'
    with pytest.raises(ParseError) as info:
        funcs["json"](text)
    assert "deep" in str(info.value) or "valid JSON" in str(info.value)


# ---- the brace scanner keeps the old recursive pattern's answers on ordinary text ---------------

_OLD = regex.compile(r'\{(?:[^{}"\\]++|\\.|"(?:[^"\\]|\\.)*+"|(?R))*+\}', regex.DOTALL)
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet="ab {}[]:,\"'\\é", max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


_PROSE = st.text(alphabet="abc .:\n", max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_PROSE, st.dictionaries(st.text(max_size=4), _JSONISH, max_size=3))))
def test_object_spans_find_every_object_between_prose(parts: list) -> None:
    import json

    text = "".join(prose + json.dumps(obj) for prose, obj in parts)
    assert object_spans(text) == [m.span() for m in _OLD.finditer(text)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}"\\a ', max_size=30))
def test_object_spans_are_balanced_and_disjoint(text: str) -> None:
    spans = object_spans(text)
    for i, (start, end) in enumerate(spans):
        assert text[start] == "{" and text[end - 1] == "}"
        assert i + 1 == len(spans) or end <= spans[i + 1][0]
    loose = object_spans(text, loose=True)
    for start, end in loose:
        assert text[start:end].count("{") == text[start:end].count("}")


def test_object_spans_stop_at_the_token_bound() -> None:
    spans = object_spans('"{' * (MAX_TOKENS + 10) + '{"a": 1}')
    assert not spans.complete
    text = 'x {"a": {"b": "}"}} y {"c": 2}'
    assert [text[a:b] for a, b in object_spans(text)] == ['{"a": {"b": "}"}}', '{"c": 2}']


# ---- the XML scanner: a close tag closes the nearest open element of its name, in O(1) ----------


def test_xml_close_tag_closes_the_nearest_open_element_of_its_name() -> None:
    root = scan("<a><b><a>x</a>y</b></a>")
    (outer,) = root.children
    (b,) = outer.children
    (inner,) = b.children
    assert inner.closed and b.closed and outer.closed
    root = scan("<a><b>x</a>")  # </a> also ends the unclosed <b>
    assert root.children[0].closed and root.children[0].children[0].end == len("<a><b>x")


def test_xml_nesting_beyond_the_bound_is_text() -> None:
    root = scan("<a>" * (MAX_DEPTH + 5))
    assert not root.complete
    depth, el = 0, root
    while el.children:
        el, depth = el.children[0], depth + 1
    assert depth == MAX_DEPTH


def test_xml_self_closing_and_attributes_still_read() -> None:
    root = scan('<a x="1/" y=2/><b  z = \'3\' >t</b><c/>')
    a, b, c = root.children
    assert a.self_closing and a.attrs == {"x": "1/", "y": "2"}
    assert not b.self_closing and b.attrs == {"z": "3"} and b.closed
    assert c.self_closing
