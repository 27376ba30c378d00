"""The incremental stream readers give, after every delta, exactly the whole-text snapshot
(issue 13: streaming re-read the whole text per delta, quadratic over a long stream)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigform.adapters import streaming
from sigform.adapters.names import FieldMatcher
from sigform.adapters.stream_readers import READERS, materialize
from sigform.signatures import make_signature

MATCHER = FieldMatcher(["answer", "n", "note"])
_PIECES = {
    "chat": ["[[ ## answer ## ]]", "[[ ## n ## ]]", "[[ ## completed ## ]]", "[[ ## other ## ]]", "[[", "[",
             " ## ", "]]", "**", "__", ":", "*", " ", "\n", "x", "y", "`", "\u2060", "_", "\t"],
    "json": ['{"answer": ', '"n": ', '"note":', '"other": ', '"', "\\", "\\u00e9", "\\n", "{", "}", "[", "]",
             ",", ":", " ", "x", "1", "\n", "true"],
    "xml": ["<answer>", "</answer>", "<n>", "</ n >", "<note/>", "<other>", "</other>", "<", ">", "/",
            "&amp;", "&", ";", " ", "x", "\n", "<!--", "-->", "</ANSWER>",
            "lorem ipsum dolor sit amet, consectetur ",
            "&eacute;", "&#65;", "&bogus;", "<![CDATA[", "]]>", "<!", "-", "[", "<b>", "!"],
}
_PIECES["auto"] = _PIECES["chat"] + _PIECES["json"]


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


def test_neutralised_brackets_that_overlap_are_restored_as_the_whole_text_is() -> None:
    # `[\u2060[` then `\u2060`: the second neutral marker may start where the first ends; the
    # reader cut the first in half and showed `[\u2060[\u2060` where the whole text reads `[[\u2060`
    text = "[[ ## answer ## ]][\u2060[\u2060"
    for fmt in ("chat", "auto"):
        reader = READERS[fmt](MATCHER)
        assert materialize(reader.snapshot(text)) == streaming._SNAPSHOTS[fmt](text, MATCHER)
        assert materialize(reader.snapshot(text))["answer"][0] == "[[\u2060"


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
        whole = streaming._SNAPSHOTS[fmt](so_far, MATCHER)
        assert materialize(reader.snapshot(so_far)) == whole, (so_far, chunk)


SIG = make_signature("question -> answer, note")
LONG = 400_000  # characters streamed 4 at a time: 100,000 deltas


@pytest.mark.parametrize(
    "fmt, text",
    [
        ("chat", "[[ ## answer ## ]]\n" + "lorem ipsum " * (LONG // 12) + "\n[[ ## note ## ]]\nok"),
        ("json", '{"answer": "' + "lorem \\u00e9 ipsum \\n " * (LONG // 24) + '", "note": "ok"}'),
        ("xml", "<answer>" + "lorem &amp; ipsum " * (LONG // 18) + "</answer><note>ok</note>"),
        ("xml", "<answer>" + "a < b <!-- c --> <![CDATA[d]]> " * (LONG // 32) + "</answer><note>ok</note>"),
        # a comment left open, with `>` in it: nothing to show until it closes, read once
        ("xml", "<answer>a <!-- " + "x > y " * (LONG // 6) + "--> b</answer><note>ok</note>"),
    ],
    ids=["chat", "json", "xml", "xml-with-lt", "xml-open-comment"],
)
def test_a_long_stream_printed_by_its_deltas_is_read_once(fmt: str, text: str) -> None:
    parser = streaming.StreamParser(SIG, fmt)
    t0 = time.process_time()
    printed: dict[str, list[str]] = {}
    last = {}

    def consume(events: list[streaming.FieldDelta]) -> None:  # one batch at a time: nothing piles up
        for event in events:
            assert not event.replaced
            printed.setdefault(event.field, []).append(event.delta)
            last[event.field] = event

    for i in range(0, len(text), 4):
        consume(parser.feed(text[i : i + 4]))
    consume(parser.finish())
    spent = time.process_time() - t0
    assert all(event.done and "".join(printed[name]) == event.text_so_far for name, event in last.items())
    assert last["note"].text_so_far == "ok"
    assert len(last["answer"].text_so_far) > LONG // 4 or last["answer"].text_so_far == "a  b"
    # ~0.3-0.7 s here; re-reading the whole text per delta took minutes (chat ~2 min), and then
    # copying the field's text into every event ~1.5 s (~16 s at 1 MB: quadratic)
    assert spent < 20.0, f"{fmt}: {spent:.1f} s for {LONG:,} characters in 4-character deltas"


def _events_by_whole_text(fmt: str, chunks: list[str]) -> list[list[tuple[str, str, bool]]]:
    """The events the parser gave before it read incrementally: the whole-text snapshot after
    each delta, a field reported when its text grew (never shrinking) or it finished."""
    shown: dict[str, tuple[str, bool]] = {}

    def report(snapshot: dict[str, tuple[str, bool]]) -> list[tuple[str, str, bool]]:
        out = []
        for name in MATCHER.names:
            if name not in snapshot or shown.get(name, ("", False))[1]:
                continue
            text, done = snapshot[name]
            old = shown.get(name, ("", False))[0]
            if not text.startswith(old) and not done:
                continue
            if text != old or done or name not in shown:
                shown[name] = (text, done)
                out.append((name, text, done))
        return out

    so_far, batches = "", []
    for chunk in chunks:
        so_far += chunk
        batches.append(report(streaming._SNAPSHOTS[fmt](so_far, MATCHER)))
    final = streaming._SNAPSHOTS[fmt](so_far + "\n", MATCHER)
    batches.append(report({name: (text, True) for name, (text, _) in final.items()}))
    return batches


@pytest.mark.parametrize("fmt", sorted(READERS))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_events_and_their_deltas_match_the_whole_text_reading(fmt: str, data: st.DataObject) -> None:
    text = "".join(data.draw(st.lists(st.sampled_from(_PIECES[fmt]), max_size=40)))
    chunks = _chunks(text, data.draw(st.lists(st.integers(0, 500), max_size=12)))
    parser = streaming.StreamParser(SIG_FIELDS, fmt)
    got = [parser.feed(chunk) for chunk in chunks] + [parser.finish()]
    seen = [[(e.field, e.text_so_far, e.done) for e in batch] for batch in got]
    assert seen == _events_by_whole_text(fmt, chunks)
    shown: dict[str, str] = {}
    for event in (e for batch in got for e in batch):
        before = shown.get(event.field, "")
        if event.replaced:  # only a finishing text that does not extend what was shown
            assert event.done and event.delta == event.text_so_far
            assert not event.text_so_far.startswith(before)
        else:
            assert event.text_so_far == before + event.delta, (before, event)
        shown[event.field] = event.text_so_far


SIG_FIELDS = make_signature("question -> answer, n, note")


def test_events_read_in_another_thread_leave_the_stream_intact() -> None:
    # a UI thread reading the latest event's text while the parser feeds: building that text
    # joins the shared pieces, which must not shift the feeding thread's deltas
    body = "".join(f"w{i} " for i in range(40_000)).strip()
    text = "[[ ## answer ## ]]\n" + body + "\n[[ ## note ## ]]\nok"
    parser = streaming.StreamParser(SIG, "chat")
    latest: list[streaming.FieldDelta | None] = [None]
    stop = threading.Event()
    wrong: list[str] = []

    def read() -> None:
        while not stop.is_set():
            event = latest[0]
            if event is not None and not body.startswith(event.text_so_far):
                wrong.append(event.text_so_far[-40:])

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    reader = threading.Thread(target=read)
    reader.start()
    printed = []
    try:
        for i in range(0, len(text), 2):
            for event in parser.feed(text[i : i + 2]):
                if event.field == "answer":
                    printed.append(event.delta)
                    latest[0] = event
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(switch)
    assert not wrong and "".join(printed) == body


def test_a_long_field_streamed_in_small_deltas_stays_about_its_size_in_memory() -> None:
    # a piece object per 4-character delta took ~20 bytes per character (20 MB at peak for a
    # 1 MB field); the pieces are merged as they come
    body = "lorem ipsum " * (200_000 // 12)
    text = "[[ ## answer ## ]]\n" + body + "\n[[ ## note ## ]]\nok"
    parser = streaming.StreamParser(SIG, "chat")
    tracemalloc.start()
    try:
        for i in range(0, len(text), 4):
            parser.feed(text[i : i + 4])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * len(body), f"{peak:,} bytes at peak for a {len(body):,}-character field"
