"""Finding ``[[ ## field ## ]]`` sections (and, failing that, ``**field**:`` labels) in LM text.

Lenient about the header: any case, missing inner spaces, a space or hyphen for ``_``, bold
markdown around it, a header in the middle of a line, the value on the header line. Text before
the first header is prose; text after the first ``[[ ## completed ## ]]`` is run-on generation
and ignored; a header cut off at the very end (``[[ ## compl``) is dropped. Sections under headers
that are not output fields (an echoed input) are skipped. Labels (no bracket headers at all):
``**field**: value``, ``1. field: value``, ``## field`` or a bold-only ``**field**`` line; the last
label's on-line value ends at a blank line (what follows is prose after the answer).

Duplicate rule (the same in every adapter): a field given more than once is accepted when every
non-empty occurrence carries the same value; different values are a structural error, never a
guess. An empty occurrence next to a filled one is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import regex

from sigform.adapters.names import FieldMatcher
from sigform.adapters.recent_scan import RecentScan

__all__ = [
    "BLANK_LINE_RE",
    "HEADER_RE",
    "MAX_HEADERS",
    "MAX_LABEL_CHARS",
    "NEUTRAL_OPEN",
    "Sections",
    "find_headers",
    "find_labels",
    "find_sections",
    "has_header",
    "neutralise_markers",
]

# Every pattern below is linear in the text: a match can only start at a `[[` or a line start,
# runs of blank space are taken possessively (`*+`: never handed back one at a time), and the
# only lazy part, a name, is at most 100 characters. So each start costs O(100 x the blank run
# it sits on), and blank runs do not overlap: O(100 n) per scan.
# [[ ## name ## ]] with tolerance; group "name" is what the LM wrote. The stdlib engine: this
# pattern has only literal classes, and `re` runs it several times faster than `regex`.
HEADER_RE = re.compile(
    r"(?:\*\*|__)?\[\[[ \t]*+\#{1,3}[ \t]*+(?P<name>[^\[\]\#\n]{1,100}?)"
    r"[ \t]*+\#{1,3}[ \t]*+\]\](?:\*\*|__)?[ \t]*+:?"
)
# the same without the optional bold in front: starting with the literal `[[`, it is found by a
# fast substring search instead of an attempt at every character (a 1 MB run of `[`: ~14 ms, not ~150)
_HEADER_CORE_RE = re.compile(HEADER_RE.pattern.removeprefix(r"(?:\*\*|__)?"))
_BOLD = ("**", "__")
# Work bound: an answer has a header per output field and one completed marker; a text with more
# than this many headers before its completed marker is a model repeating itself, and is not
# read as sections (the error says so). Each header costs ~1 µs of Python, so 47,000 headers in
# 1 MB took ~60 ms per reading; the scans stop after MAX_HEADERS + 1.
MAX_HEADERS = 2_000


def find_headers(text: str) -> list[re.Match[str]]:
    """The first ``MAX_HEADERS + 1`` matches of ``HEADER_RE.finditer(text)`` (a new list each call)."""
    return list(_recent_headers(text))


def _find_headers(text: str) -> list[re.Match[str]]:
    """The first ``MAX_HEADERS + 1`` matches of ``HEADER_RE.finditer(text)``, found with ``_HEADER_CORE_RE``.

    A match of HEADER_RE is a core match, starting two characters earlier when bold (``**``/``__``)
    stands there and the previous match has not taken it: the core is the same after the bold.
    """
    out: list[re.Match[str]] = []
    pos = 0
    while (match := _HEADER_CORE_RE.search(text, pos)) is not None:
        start = match.start()
        if start - 2 >= pos and text[start - 2 : start] in _BOLD:
            match = HEADER_RE.match(text, start - 2) or match  # the same header, from its bold
        out.append(match)
        if len(out) > MAX_HEADERS:
            break
        pos = match.end()
    return out


# one answer is read for headers up to three times: the Chat sections, the label check, and the
# Chat reading inside the JSON fallback on the same text
_recent_headers: RecentScan[list[re.Match[str]]] = RecentScan(_find_headers)


def has_header(text: str) -> bool:
    """Whether ``HEADER_RE.search(text)`` finds anything."""
    return "[[" in text and bool(_recent_headers(text))


# what would start a header: neutralised in user text so it cannot forge a field marker
_FORGE_RE = regex.compile(r"\[\[(?=[ \t]*\#)")
NEUTRAL_OPEN = "[\u2060["  # a word joiner between the brackets: reads the same, never parses as a header
_FENCE_OPEN = regex.compile(r"\A\s*```[^\n`]*\n")
_FENCE_CLOSE = regex.compile(r"\n?```\s*\Z")
# a label name: up to 61 characters, never ending in a blank. The shortest name that fits is the
# one taken, and it never ends in a blank (the blank run after it takes those), so this reads the
# same names as `[\w \-]{0,60}?` would; but a blank run after a label is now scanned once, not
# once per name length (a label then 1 MB of blanks: ~60 scans of the run before)
_LABEL_NAME = r"[A-Za-z](?:[\w \-]{0,59}?[\w\-])??"
_LABEL_RE = regex.compile(
    r"^[ \t]*+(?:(?:[-*+]|\d{1,3}[.)])[ \t]++)?+(?:\#{1,6}[ \t]*+)?+(?:\*\*|__)?+[ \t]*+"
    r"(?P<name>" + _LABEL_NAME + r")[ \t]*+"
    r"(?:(?:\*\*|__)[ \t]*+:|:[ \t]*+(?:\*\*|__)|:)[ \t]*+",
    regex.MULTILINE,
)
# a heading line: `## Summary`, or a line that is only a bold name (`**Summary**`)
_HEADING_RE = regex.compile(
    r"^[ \t]*+(?:\#{1,6}[ \t]*+(?P<name>" + _LABEL_NAME + r")"
    r"|(?:\*\*|__)[ \t]*+(?P<name>" + _LABEL_NAME + r")[ \t]*+(?:\*\*|__))[ \t]*+$",
    regex.MULTILINE,
)
BLANK_LINE_RE = regex.compile(r"\n[ \t]*+\r?\n")  # possessive: a blank run is not retried char by char
# a header cut off at the very end (`[[ ## compl`, `[[ ## completed ## ]`): the value before it is whole
_CUT_HEADER = regex.compile(r"(?:\*\*|__)?\[\[[ \t]*+\#[^\[\]\n]{0,100}\]?\s*+\Z")


def neutralise_markers(text: str) -> str:
    """User text with anything that could read as a ``[[ ## ... ## ]]`` header defused."""
    if "[[" not in text:
        return text
    return _FORGE_RE.sub(NEUTRAL_OPEN, text)


def restore_markers(text: str) -> str:
    return text.replace(NEUTRAL_OPEN, "[[") if NEUTRAL_OPEN in text else text


def unfence(text: str) -> str:
    """Remove one code fence around the whole text (any tag, any case)."""
    match = _FENCE_OPEN.match(text)
    if not match:
        return text
    body = text[match.end() :]
    close = _FENCE_CLOSE.search(body)
    return body[: close.start()] if close else body


@dataclass
class Sections:
    """Raw text per output field, plus what the scan saw."""

    values: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    completed: bool = False
    last: str | None = None  # the field whose section runs to the end of the text (no marker after it)
    headers: int = 0  # bracket headers seen (any name)
    note: str | None = None  # why the text was not read (over a work bound)


def _add(out: Sections, name: str, value: str) -> None:
    old = out.values.get(name)
    if old is None or (not old and value):
        out.values[name] = value
    elif value and value != old:
        out.conflicts.setdefault(name, [old]).append(value)


def _quoted(text: str, start: int, end: int) -> bool:
    return start > 0 and text[start - 1] == "`" and end < len(text) and text[end] == "`"


_OVER_HEADERS = (
    f"the text has over {MAX_HEADERS:,} `[[ ## ... ## ]]` headers before any completed marker "
    "(a model repeating itself); it was not read as sections"
)


def find_sections(text: str, matcher: FieldMatcher) -> Sections:
    """Sections under bracket headers; ``headers == 0`` means the text has none."""
    out = Sections()
    if "[[" not in text:
        return out
    text = unfence(text) if text.lstrip().startswith("```") else text
    opens = text.count("[[")
    headers: list[Any] = []  # match objects of either engine: start(), end(), group("name")
    # every exact header holds its own "[[ ## ": with fewer of those than "[[" the exact scan
    # cannot account for every "[[" (a run of `[`), so it is not tried
    if text.count("[[ ## ") >= opens:
        headers = list(islice(matcher.exact_header_re.finditer(text), MAX_HEADERS + 1))
    if len(headers) != opens:
        headers = find_headers(text)
    over = len(headers) > MAX_HEADERS  # the scans stopped: there may be more headers after these
    # `[[ ## name ## ]]` in backticks is a mention inside prose (an echoed instruction), not a header
    headers = [m for m in headers if not _quoted(text, m.start(), m.end())]
    out.headers = len(headers)
    if over:
        headers = headers[:MAX_HEADERS]
    for i, match in enumerate(headers):
        written = match.group("name")
        name = matcher.match(written)
        if name is None and written.strip().lower() == "completed":
            out.completed = True
            break
        if over and i + 1 == len(headers):  # no completed marker among the first MAX_HEADERS
            return Sections(headers=out.headers, note=_OVER_HEADERS)
        if name is None:
            continue  # an echoed input or an unknown section: it only ends the previous one
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        value = text[match.end() : end]
        if i + 1 == len(headers):
            out.last = name
            if "[[" in value:
                value = _CUT_HEADER.sub("", value)
            if value.count("```") % 2:
                value = _FENCE_CLOSE.sub("", value)  # a fence around the whole answer, completed missing
        _add(out, name, restore_markers(value.strip()))
    return out


# Work bound: labels are the loosest format, read only when no header, JSON or XML answer is found;
# the label patterns are tried at every line start (and the engine checks `^` at every
# position: ~20 ms a MB, ~0.6 µs a short line), so a longer text is not read as labels
MAX_LABEL_CHARS = 100_000
_OVER_LABEL_CHARS = (
    f"the text is over {MAX_LABEL_CHARS:,} characters, too long to read `field: value` labels in"
)


def find_labels(text: str, matcher: FieldMatcher) -> Sections:
    """``**field**: value`` / ``field: value`` / ``## field`` labels at line starts (no brackets)."""
    out = Sections()
    if len(text) > MAX_LABEL_CHARS:
        out.note = _OVER_LABEL_CHARS
        return out
    marks: list[tuple[int, int, str]] = []
    for regex_ in (_LABEL_RE, _HEADING_RE):
        for match in regex_.finditer(text):
            name = matcher.match(match.group("name"))
            if name is not None:
                marks.append((match.start(), match.end(), name))
    marks.sort()
    for i, (_, end, name) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        value = text[end:stop]
        if i + 1 == len(marks) and value[:1] not in ("\n", "\r"):
            # the last label's value is on its line: a later paragraph is prose after the answer
            blank = BLANK_LINE_RE.search(value)
            value = value[: blank.start()] if blank else value
        _add(out, name, value.strip())
    out.headers = len(marks)
    return out
