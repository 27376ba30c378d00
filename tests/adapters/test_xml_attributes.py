"""XML attributes: a long word that is no attribute is skipped in one step, with the same reading."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sigform.adapters import xml_scan

# the attribute pattern before the word-skipping branch (a look-behind refused each letter of a word)
OLD_ATTR_RE = regex.compile(
    r"""(?<![\w.\-:])([A-Za-z_][\w.\-:]*+)\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'>/]++))"""
)


def old_attrs(raw: str) -> dict[str, str]:
    if not raw or "=" not in raw:
        return {}
    out: dict[str, str] = {}
    for match in OLD_ATTR_RE.finditer(raw):
        name = match.group(1)
        if name.startswith("xml:") or name.startswith("xmlns"):
            continue
        out[name] = xml_scan._decode_plain(next(v for v in match.groups()[1:] if v is not None))
    return out


_PIECES = st.sampled_from(
    [" ", "a", "b1", "_", ".", "-", ":", "=", '"', "'", "/", ">", "\t", "é", "²", "x:y", "xmlns", "&amp;"]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=16).map("".join))
def test_attributes_read_as_before(raw: str) -> None:
    assert xml_scan._attrs(raw) == old_attrs(raw)


def test_a_long_word_before_an_attribute() -> None:
    raw = " " + "b" * 100_000 + ' c=1 d="x=y" e.f-g:h=\'2\''
    assert xml_scan._attrs(raw) == old_attrs(raw) == {"c": "1", "d": "x=y", "e.f-g:h": "2"}
    matches = list(xml_scan._ATTR_RE.finditer(" " + "b" * 100_000 + " c=1"))
    assert len(matches) == 2 and matches[0].group(1) is None  # the word is one step, not 100,000 tries


OLD_TOKEN_RE = regex.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<!\[CDATA\[.*?(?:\]\]>|\Z)"
    r"|<[?!][^<>]*>"
    r"|<(?P<close>/)?(?P<name>[A-Za-z_][\w.\-:]{0,80}+)(?P<attrs>(?:[\s/][^<>]*+)?)>",
    regex.DOTALL,
)
_TAG_PIECES = st.sampled_from(
    ["<", "<<", ">", "/", "a", "b", " ", "!", "?", "-", "--", "[CDATA[", "]]", "é", "\n"]
)


def tags(pattern: regex.Pattern[str], text: str) -> list[tuple[int, int, str | None, str | None]]:
    found = pattern.finditer(text)
    return [(m.start(), m.end(), m.group("name"), m.group("attrs")) for m in found if m.group("name")]


@settings(max_examples=3000, deadline=None)
@given(st.lists(_TAG_PIECES, max_size=40).map("".join))
def test_tags_found_as_before(text: str) -> None:
    assert tags(xml_scan._TOKEN_RE, text) == tags(OLD_TOKEN_RE, text)


def test_a_run_of_less_than_signs_is_one_step() -> None:
    text = "<" * 50_000 + "<a>1</a>"
    assert tags(xml_scan._TOKEN_RE, text) == tags(OLD_TOKEN_RE, text) == [
        (50_000, 50_003, "a", ""), (50_004, 50_008, "a", "")
    ]
    assert len(list(xml_scan._TOKEN_RE.finditer(text))) == 3
