"""Work bounds that keep a parse of 1 MB under 50 ms (issue 13): past a bound a format is not read.

Each bound is a count that no real answer comes near (a header per output field, a few objects,
a few thousand tags); garbled output past it is refused with an error naming the bound, and a
format is never read from the part of the text before the bound (a later value could contradict
an earlier one). Figures: ``python -m benchmarks.adversarial_parse``.
"""

from __future__ import annotations

import html

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import sigform as sf
from sigform.adapters import chat_scan, xml_scan
from sigform.adapters.brace_scan import MAX_TOKENS
from sigform.adapters.chat_scan import MAX_HEADERS, MAX_LABEL_CHARS, find_headers
from sigform.adapters.names import FieldMatcher
from sigform.adapters.xml_scan import MAX_ELEMENTS, MAX_LESS_THAN
from sigform.errors import StructureError
from sigform.excerpt import shorten
from sigform.signatures import InputField, OutputField, make_signature

SIG = make_signature({"text": (str, InputField()), "answer": (str, OutputField()), "n": (int, OutputField())})


def test_chat_headers_past_the_bound_are_not_read_as_sections() -> None:
    block = "[[ ## answer ## ]]\nx\n[[ ## n ## ]]\n1\n"
    assert sf.ChatAdapter().parse(SIG, block * 10) == {"answer": "x", "n": 1}  # a short loop reads
    text = block * (MAX_HEADERS // 2 + 1)
    with pytest.raises(StructureError) as info:
        sf.ChatAdapter(fallback=False).parse(SIG, text)
    assert f"over {MAX_HEADERS:,}" in str(info.value) and "headers" in str(info.value)
    assert len(find_headers(text)) == MAX_HEADERS + 1  # the scan stops there


def test_a_completed_marker_before_the_bound_still_ends_the_answer() -> None:
    text = "[[ ## answer ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## completed ## ]]\n" + "[[ ## answer ## ]]\ny\n" * (
        MAX_HEADERS + 10
    )
    assert sf.ChatAdapter().parse(SIG, text) == {"answer": "x", "n": 1}


def test_labels_are_read_only_in_texts_up_to_the_bound() -> None:
    short = "answer: " + "y" * 1000 + "\nn: 3"
    assert sf.ChatAdapter(fallback=False).parse(SIG, short) == {"answer": "y" * 1000, "n": 3}
    long = "answer: " + "y" * MAX_LABEL_CHARS + "\nn: 3"
    with pytest.raises(StructureError) as info:
        sf.ChatAdapter(fallback=False).parse(SIG, long)
    assert f"over {MAX_LABEL_CHARS:,} characters" in str(info.value)
    assert chat_scan.find_labels(long, FieldMatcher(["answer", "n"])).values == {}


def test_json_past_the_token_bound_is_not_read_from_its_first_part() -> None:
    # the later object wins when all are read; reading only the first 20,000 tokens gave "a"
    text = '{"answer": "a", "n": 1}\n' * (MAX_TOKENS // 4) + '{"answer": "b", "n": 2}'
    for adapter in (sf.JSONAdapter(fallback=False), sf.ChatAdapter(fallback=False)):
        with pytest.raises(StructureError) as info:
            adapter.parse(SIG, text)
        assert f"over {MAX_TOKENS:,} braces and strings" in str(info.value)
    few = '{"answer": "a", "n": 1}\n' * 3 + '{"answer": "b", "n": 2}'
    assert sf.JSONAdapter().parse(SIG, few) == {"answer": "b", "n": 2}


def test_xml_past_the_element_bound_is_not_read_from_its_first_part() -> None:
    # with the elements past the bound left as text, `answer` read "a" and missed the conflict
    text = "<n>1</n>" + "<answer>a</answer>" * MAX_ELEMENTS + "<answer>b</answer>"
    with pytest.raises(StructureError) as info:
        sf.XMLAdapter(fallback=False).parse(SIG, text)
    assert "not read as XML" in str(info.value)
    assert sf.XMLAdapter().parse(SIG, "<n>1</n>" + "<answer>a</answer>" * 50) == {"answer": "a", "n": 1}


def test_a_text_with_too_many_less_than_signs_is_not_scanned() -> None:
    text = "<!" * (MAX_LESS_THAN + 1) + "<answer>x</answer><n>2</n>"
    assert not xml_scan.scan(text).complete and xml_scan.scan(text).children == []
    with pytest.raises(StructureError) as info:
        sf.XMLAdapter(fallback=False).parse(SIG, text)
    assert f"over {MAX_LESS_THAN:,} `<`" in str(info.value)
    ok = "a < b, " * 1000 + "<answer>x</answer><n>2</n>"
    assert sf.XMLAdapter().parse(SIG, ok) == {"answer": "x", "n": 2}


def test_a_stretch_of_less_than_signs_that_open_nothing_is_one_step() -> None:
    text = "<a" * 50_000 + "<b x=1>t</b>"
    found = [m for m in xml_scan._TOKEN_RE.finditer(text)]
    assert len(found) == 3 and found[0].group("name") is None  # was one failed try per `<a`
    assert [(m.group("name"), m.group("attrs")) for m in found[1:]] == [("b", " x=1"), ("b", "")]


# the entity decoding before it was a Python call per entity
_OLD_ENTITY_RE = regex.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ENTITY_PIECES = st.sampled_from(
    ["&", "amp;", "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#65;", "&#x41;", "&eacute;", "&bogus;",
     "&amp", ";", "a", " ", "<", "&#1114112;", "&#xD800;"]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_ENTITY_PIECES, max_size=12).map("".join))
def test_entities_decode_as_before(text: str) -> None:
    assert xml_scan._decode_plain(text) == _OLD_ENTITY_RE.sub(lambda m: html.unescape(m.group()), text)


@pytest.mark.parametrize("tail", ["", "& &lt;x &am", "&eacute; &", "&amp;lt; &#65;", "&&amp;;"])
def test_many_entities_with_stray_ampersands_decode_as_before(tail: str) -> None:
    text = "a&amp;b&lt;" * 100 + tail + "&quot;&apos;&gt;" * 3
    assert xml_scan._decode_plain(text) == _OLD_ENTITY_RE.sub(lambda m: html.unescape(m.group()), text)


def test_a_wall_of_entities_is_not_decoded_one_call_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = html.unescape
    monkeypatch.setattr(xml_scan.html, "unescape", lambda s: calls.append(s) or real(s))
    xml_scan._entity.cache_clear()
    assert xml_scan.decode_text("&amp;&lt;" * 50_000) == "&<" * 50_000
    assert xml_scan.decode_text("&eacute;&#65;" * 50_000 + "&") == "éA" * 50_000 + "&"
    assert len(calls) <= 2  # each distinct entity once, not 100,000 calls


def test_shorten_escapes_only_the_ends_of_a_long_text() -> None:
    seen: list[int] = []

    class Spy(str):
        def replace(self, *args: object) -> str:  # type: ignore[override]
            seen.append(len(self))
            return str.replace(self, *args)  # type: ignore[arg-type]

    text = Spy("a\nb" * 300_000)
    assert shorten(text, 160) == shorten(str(text), 160) == shorten("a\nb" * 300, 160)
    assert not seen  # the 900,000 characters were escaped whole before being cut to 160


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab\n\r", max_size=3000), st.sampled_from([16, 40, 120, 160, 400]))
def test_shorten_reads_as_before(text: str, limit: int) -> None:
    s = text.replace("\r", "\\r").replace("\n", "\\n")
    if len(s) > limit:
        head = limit * 2 // 3
        s = f"{s[:head]} ... {s[-(limit - head - 5):]}"
    assert shorten(text, limit) == s
