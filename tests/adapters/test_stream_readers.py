"""The incremental stream readers give, after every delta, exactly the whole-text snapshot
(issue 13: streaming re-read the whole text per delta, quadratic over a long stream)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigform.adapters import streaming
from sigform.adapters.names import FieldMatcher
from sigform.adapters.stream_readers import READERS
from sigform.signatures import make_signature

MATCHER = FieldMatcher(["answer", "n", "note"])
_PIECES = {
    "chat": ["[[ ## answer ## ]]", "[[ ## n ## ]]", "[[ ## completed ## ]]", "[[ ## other ## ]]", "[[", "[",
             " ## ", "]]", "**", "__", ":", "*", " ", "\n", "x", "y", "`", "\u2060"],
    "json": ['{"answer": ', '"n": ', '"note":', '"other": ', '"', "\\", "\\u00e9", "\\n", "{", "}", "[", "]",
             ",", ":", " ", "x", "1", "\n", "true"],
    "xml": ["<answer>", "</answer>", "<n>", "</ n >", "<note/>", "<other>", "</other>", "<", ">", "/",
            "&amp;", "&", ";", " ", "x", "\n", "<!--", "-->", "</ANSWER>",
            "lorem ipsum dolor sit amet, consectetur ",
            "&eacute;", "&#65;", "&bogus;"],
}
_PIECES["auto"] = _PIECES["chat"] + _PIECES["json"]


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@pytest.mark.parametrize("fmt", sorted(READERS))
@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_every_snapshot_equals_the_whole_text_reading(fmt: str, data: st.DataObject) -> None:
    text = "".join(data.draw(st.lists(st.sampled_from(_PIECES[fmt]), max_size=40)))
    cuts = data.draw(st.lists(st.integers(0, 500), max_size=12))
    reader = READERS[fmt](MATCHER)
    so_far = ""
    for chunk in _chunks(text, cuts):
        so_far += chunk
        assert reader.snapshot(so_far) == streaming._SNAPSHOTS[fmt](so_far, MATCHER), (so_far, chunk)


SIG = make_signature("question -> answer, note")
LONG = 200_000  # characters streamed 4 at a time: 50,000 deltas


@pytest.mark.parametrize(
    "fmt, text",
    [
        ("chat", "[[ ## answer ## ]]\n" + "lorem ipsum " * (LONG // 12) + "\n[[ ## note ## ]]\nok"),
        ("json", '{"answer": "' + "lorem \\u00e9 ipsum \\n " * (LONG // 24) + '", "note": "ok"}'),
        ("xml", "<answer>" + "lorem &amp; ipsum " * (LONG // 18) + "</answer><note>ok</note>"),
    ],
)
def test_a_long_stream_is_read_without_rereading_the_text(fmt: str, text: str) -> None:
    parser = streaming.StreamParser(SIG, fmt)
    t0 = time.process_time()
    fields: dict[str, str] = {}
    for i in range(0, len(text), 4):
        for event in parser.feed(text[i : i + 4]):
            fields[event.field] = event.text_so_far
    for event in parser.finish():
        fields[event.field] = event.text_so_far
    spent = time.process_time() - t0
    assert fields["note"] == "ok" and len(fields["answer"]) > LONG // 2
    # ~0.3-0.7 s here (each event still carries a fresh copy of its field's text); re-reading
    # the whole text per delta took minutes (chat ~2 min, JSON's per-character decode longer)
    assert spent < 20.0, f"{fmt}: {spent:.1f} s for {LONG:,} characters in 4-character deltas"
