"""Incremental snapshots for :class:`~sigform.adapters.streaming.StreamParser`: linear over a stream.

Each reader gives, for the text received so far, the same ``{field: (text, done)}`` as the
matching whole-text snapshot in :mod:`sigform.adapters.streaming`, but it remembers what is
settled (finished fields, the position up to which no marker can still start) and on the next
delta reads only from there. A marker that may still be completing at the end of the text (a
header, a tag or a key cut off, found with the ``regex`` module's partial matching) is read again
once more text arrives. The open field's text is an :class:`~sigform.adapters.stream_text.OpenText`:
what no later text can change is decoded once and kept; only a short tail is read per delta, and
the snapshot gives a :class:`~sigform.adapters.stream_text.TextAt` that builds the full string
only when read (``materialize`` gives plain strings). Python and C work per delta is
proportional to the delta.
"""

from __future__ import annotations

import json
from typing import Any

import regex

from sigform.adapters.chat_scan import HEADER_RE, NEUTRAL_OPEN, restore_markers
from sigform.adapters.names import FieldMatcher, norm_name
from sigform.adapters.stream_text import GrowingText, OpenText, TextAt, text_of
from sigform.adapters.xml_scan import decode_text

__all__ = ["READERS", "ChatReader", "JSONReader", "XMLReader", "materialize"]

Snapshot = dict[str, tuple[str | TextAt, bool]]


def materialize(snapshot: Snapshot) -> dict[str, tuple[str, bool]]:
    """The snapshot with every text built (as the whole-text snapshot functions give it)."""
    return {name: (text_of(text), done) for name, (text, done) in snapshot.items()}

# the header pattern in the engine that can say "a match could still complete here"
_HEADER_PARTIAL = regex.compile(HEADER_RE.pattern)
_PARTIAL_HEADER_RE = regex.compile(r"(?:\*{1,2}|_{1,2})?\[(?:\[[^\]\n]{0,110}(?:\][^\]\n]?)?)?\Z")
_PARTIAL_MAX = 120  # the longest text _PARTIAL_HEADER_RE can match


def held_back_header(body: str) -> str:
    """``body`` without a header that may be starting at its end (only the last characters are read)."""
    return body[: _held_back_end(body, 0)]


def _held_back_end(text: str, start: int) -> int:
    """Where ``text[start:]`` ends once a header that may be starting at its end is held back."""
    partial = _PARTIAL_HEADER_RE.search(text, max(start, len(text) - _PARTIAL_MAX))
    return len(text) if partial is None else partial.start()


def _outside_neutral(text: str, low: int, safe: int) -> int:
    """``safe``, moved back before a neutralised ``[[`` it would cut or that may still complete
    (again from there: in ``[\u2060[\u2060`` the second may start where the first ends)."""
    while True:
        first = max(low, safe - len(NEUTRAL_OPEN) + 1)
        if text.find("[", first, safe) < 0:
            return safe
        for p in range(first, safe):
            if NEUTRAL_OPEN.startswith(text[p : p + len(NEUTRAL_OPEN)]):
                safe = p
                break
        else:
            return safe


class ChatReader:
    """``[[ ## field ## ]]`` sections, read as they arrive."""

    def __init__(self, matcher: FieldMatcher) -> None:
        self.matcher = matcher
        self.done: Snapshot = {}  # fields closed by a later header
        self.pos = 0  # the next header starts here or later
        self.open: str | None = None  # the field whose body runs on (None: text after a skipped header)
        self.body_start = 0
        self.stopped = False  # the completed marker was read
        self.view: OpenText | None = None  # the open field's text, read as it grows
        self.closing: tuple[int, int, str] | None = None  # a tentatively closed field's text

    def snapshot(self, text: str) -> Snapshot:
        tentative = None  # a header that touches the end of the text: it may still grow
        while not self.stopped:
            match = _HEADER_PARTIAL.search(text, self.pos, partial=True)
            if match is None or match.partial:
                self.pos = len(text) if match is None else match.start()
                break
            if match.end() > len(text) - 2:  # `]]` then `*` or blanks: bold or a colon may follow
                self.pos, tentative = match.start(), match
                break
            self._header(text, match, self.done)
            self.pos = match.end()
        out = dict(self.done)
        if self.stopped:
            return out
        if tentative is not None:  # as the whole-text reading sees it now, without keeping it
            state = (self.open, self.body_start, self.stopped)
            self._header(text, tentative, out)
            opened, start, stopped = self.open, self.body_start, self.stopped
            self.open, self.body_start, self.stopped = state
            if not stopped and opened is not None and opened not in out:
                out[opened] = (restore_markers(held_back_header(text[start:]).strip()), False)
            return out
        if self.open is not None and self.open not in out:
            out[self.open] = (self._open_text(text), False)
        return out

    def _open_text(self, text: str) -> TextAt:
        if self.view is None or self.view.start != self.body_start:
            self.view = OpenText(self.body_start, restore_markers)
        end = _held_back_end(text, self.body_start)
        # no header starts before self.pos, so text before it (and before `end`) is final
        safe = _outside_neutral(text, self.view.raw_pos, min(end, self.pos))
        return self.view.update(text, safe, end)

    def _header(self, text: str, match: Any, done: Snapshot) -> None:
        """A header ends the open section and starts the next one (or stops the reading)."""
        if self.open is not None and self.open not in done:
            done[self.open] = (self._section(text, match.start()), True)
        self.open = None
        written = match.group("name")
        if norm_name(written) == "completed":
            self.stopped = True
            return
        name = self.matcher.match(written)
        if name is not None and name not in done:
            self.open, self.body_start = name, match.end()

    def _section(self, text: str, end: int) -> str:
        """The open section's finished text; a header still growing at the end asks again per delta."""
        if self.closing is None or self.closing[:2] != (self.body_start, end):
            self.closing = (self.body_start, end, restore_markers(text[self.body_start : end].strip()))
        return self.closing[2]


_OPEN_TAG_PARTIAL = regex.compile(r"<(?P<name>[A-Za-z_][\w.\-:]{0,80})(?:\s[^<>]*?)?(?P<self>/)?>")


class XMLReader:
    """``<field>...</field>`` elements, read as they arrive."""

    def __init__(self, matcher: FieldMatcher) -> None:
        self.matcher = matcher
        self.done: Snapshot = {}
        self.pos = 0  # the next open tag starts here or later
        self.open: str | None = None
        self.body_start = 0
        self.close: Any = None  # the open element's close-tag pattern
        self.close_from = 0  # its close tag starts here or later
        self.view: OpenText | None = None  # the open element's text, read as it grows
        self.scanned = 0  # `<` and `>` in the open element's text are known up to here
        self.last_lt = -1  # the last `<` in it (-1: none)
        self.gt_after = False  # a `>` follows that `<`
        self.comment_at = -1  # an unclosed comment opening the undecoded text starts here
        self.comment_scanned = 0  # ... and has no `-->` and no `<` up to here

    def snapshot(self, text: str) -> Snapshot:
        while True:
            if self.open is None:
                match = _OPEN_TAG_PARTIAL.search(text, self.pos, partial=True)
                if match is None or match.partial:
                    self.pos = len(text) if match is None else match.start()
                    break
                name = self.matcher.match(match.group("name"))
                self.pos = match.end()
                if name is None or name in self.done:
                    continue
                if match.group("self"):
                    self.done[name] = ("", True)
                    continue
                self.open, self.body_start = name, match.end()
                self.close = regex.compile(
                    r"</\s*" + regex.escape(match.group("name")) + r"\s*>", regex.IGNORECASE
                )
                self.close_from = self.scanned = match.end()
                self.view, self.last_lt, self.gt_after = OpenText(match.end(), decode_text), -1, False
            end = self.close.search(text, self.close_from, partial=True)
            if end is None or end.partial:
                self.close_from = len(text) if end is None else end.start()
                break
            self.done[self.open] = (decode_text(text[self.body_start : end.start()]).strip(), True)
            self.open, self.pos, self.view = None, end.end(), None
        out = dict(self.done)
        if self.open is not None:
            out[self.open] = (self._open_text(text), False)
        return out

    def _open_text(self, text: str) -> TextAt:
        """The open element's text so far, as ``_xml_snapshot`` reads it."""
        assert self.view is not None
        lt = text.rfind("<", self.scanned)
        if lt >= 0:
            self.last_lt, self.gt_after = lt, text.find(">", lt) >= 0
        elif not self.gt_after and self.last_lt >= 0:
            self.gt_after = text.find(">", self.scanned) >= 0
        self.scanned = len(text)
        # a `<` with no `>` after it may be the start of the close tag: the text stops before it
        end = self.last_lt if self.last_lt >= 0 and not self.gt_after else len(text)
        amp = text.rfind("&", max(self.body_start, end - 10), end)
        if amp >= 0 and text.find(";", amp, end) < 0:
            end = amp  # maybe an unfinished entity
        start = self.view.raw_pos
        if self._unclosed_comment(text, start):  # it decodes to nothing, however long it grows
            return self.view.update(text, start, start)
        return self.view.update(text, _xml_safe(text, start, end), end)

    def _unclosed_comment(self, text: str, start: int) -> bool:
        """Whether the undecoded text is one comment not closed yet, with no ``<`` inside
        (``decode_text`` drops an unclosed comment up to the end); read once per delta."""
        if not text.startswith(_COMMENT_OPEN, start):
            return False
        if self.comment_at != start:
            self.comment_at, self.comment_scanned = start, start + len(_COMMENT_OPEN)
        scanned = self.comment_scanned
        if text.find("-->", max(start + len(_COMMENT_OPEN), scanned - 2)) >= 0:
            return False
        if text.find("<", max(start + 1, scanned)) >= 0:
            return False
        self.comment_scanned = len(text)
        return True


_CDATA_OPEN = "<![CDATA["
_COMMENT_OPEN = "<!--"


def _xml_safe(text: str, low: int, end: int) -> int:
    """The furthest point in ``low..end`` where the element's raw text can be cut and each side
    decoded alone, whatever follows: not inside an entity, a comment or a CDATA section, and not
    past one that may still close (``decode_text`` reads an unclosed one up to the end)."""
    pos = low
    while True:
        lt = text.find("<", pos, end)
        if lt < 0:
            return _entity_safe(text, pos, end)
        head = text[lt : lt + len(_CDATA_OPEN)]
        if head.startswith(_CDATA_OPEN):
            close = text.find("]]>", lt + len(_CDATA_OPEN), end)
            if close < 0:
                return lt
            pos = close + 3
        elif head.startswith(_COMMENT_OPEN):
            close = text.find("-->", lt + len(_COMMENT_OPEN), end)
            if close < 0 or text.find("<", lt + 1, close) >= 0:  # a `<` inside: read it whole
                return lt
            pos = close + 3
        elif len(head) < len(_CDATA_OPEN) and any(o.startswith(head) for o in (_CDATA_OPEN, _COMMENT_OPEN)):
            return lt  # may still become one
        else:
            pos = lt + 1  # a plain `<`: decoding leaves it as it is


def _entity_safe(text: str, low: int, end: int) -> int:
    """A point in ``low..end`` that no entity can cross (an entity is at most 40 characters)."""
    settled = max(low, end - 40)
    amp = text.rfind("&", max(low, settled - 40), settled)
    if amp >= 0 and text.find(";", amp, settled) < 0:
        settled = amp
    return settled


_KEY_PARTIAL = regex.compile(r'"(?P<key>(?:[^"\\]|\\.){1,200})"\s*:\s*')
_PLAIN = regex.compile(r'[^"\\]+')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class _StringValue:
    """A JSON string value decoded as it arrives (runs of plain characters in one step)."""

    def __init__(self, start: int) -> None:
        self.pos = start  # after the opening quote
        self.pieces = GrowingText()  # the decoded text: each piece is final
        self.closed = False

    def read(self, text: str) -> None:
        i = self.pos
        while i < len(text):
            plain = _PLAIN.match(text, i)
            if plain is not None:
                self.pieces.append(plain.group())
                i = plain.end()
                continue
            if text[i] == '"':
                self.closed, i = True, i + 1
                break
            if i + 1 >= len(text):
                break  # a backslash at the end: wait for what it escapes
            nxt = text[i + 1]
            if nxt == "u":
                if i + 6 > len(text):
                    break
                try:
                    self.pieces.append(json.loads(f'"{text[i : i + 6]}"'))
                except ValueError:
                    self.pieces.append(text[i : i + 6])
                i += 6
                continue
            self.pieces.append(_ESCAPES.get(nxt, nxt))
            i += 2
        self.pos = i

    def text(self) -> str:
        return self.pieces.prefix(self.pieces.length)

    def so_far(self) -> TextAt:
        return TextAt(self.pieces, self.pieces.length, "")


class _OtherValue:
    """The end of a number, literal or structure, found as the text arrives."""

    def __init__(self, start: int) -> None:
        self.start = self.pos = start
        self.depth = 0
        self.in_string = False
        self.end: int | None = None

    def read(self, text: str) -> None:
        i = self.pos
        while i < len(text):
            ch = text[i]
            if self.in_string:
                if ch == "\\":
                    if i + 1 >= len(text):
                        break
                    i += 2
                    continue
                if ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                if self.depth == 0:
                    self.end = i
                    return
                self.depth -= 1
            elif ch == "," and self.depth == 0:
                self.end = i
                return
            i += 1
        self.pos = i


class JSONReader:
    """The answer object's keys and values, read as they arrive."""

    def __init__(self, matcher: FieldMatcher) -> None:
        self.matcher = matcher
        self.done: Snapshot = {}
        self.pos = -1  # after the object's `{` (-1: not seen yet)
        self.key: str | None = None  # the field whose value is being read (None: not a field)
        self.value: _StringValue | _OtherValue | None = None
        self.value_start = 0
        self.view: OpenText | None = None  # a structure's text as written, read as it grows

    def snapshot(self, text: str) -> Snapshot:
        if self.pos < 0:
            start = text.find("{")
            if start < 0:
                return {}
            self.pos = start + 1
        while True:
            if self.value is None:
                match = _KEY_PARTIAL.search(text, self.pos, partial=True)
                if match is None or match.partial or match.end() >= len(text):
                    # a key cut off, or `"key":` with its value (or more blanks) still to come
                    self.pos = len(text) if match is None else match.start()
                    if match is not None and not match.partial:
                        name = self._name(match.group("key"))
                        if name is not None and name not in self.done:
                            return {**self.done, name: ("", False)}
                    break
                self.key = self._name(match.group("key"))
                self.value_start = match.end()
                self.view = None
                if text[self.value_start] == '"':
                    self.value = _StringValue(self.value_start + 1)
                else:
                    self.value = _OtherValue(self.value_start)
            self.value.read(text)
            if isinstance(self.value, _StringValue):
                closed, end = self.value.closed, self.value.pos
            else:
                closed = self.value.end is not None
                end = self.value.end if self.value.end is not None else len(text)
            if not closed:
                break
            if self.key is not None and self.key not in self.done:
                self.done[self.key] = (self._value_text(text, end), True)
            self.value, self.key, self.pos = None, None, end
        out = dict(self.done)
        if self.value is not None and self.key is not None and self.key not in out:
            if isinstance(self.value, _StringValue):
                out[self.key] = (self.value.so_far(), False)
            else:  # a number or literal may still grow; a structure is shown as written
                out[self.key] = (self._structure_so_far(text), False)
        return out

    def _structure_so_far(self, text: str) -> str | TextAt:
        if text[self.value_start] not in "{[":  # the key pattern took the blanks before it
            return ""
        if self.view is None:
            self.view = OpenText(self.value_start, str)
        return self.view.update(text, len(text), len(text))

    def _name(self, raw: str) -> str | None:
        try:
            key = json.loads(f'"{raw}"')
        except ValueError:
            key = raw
        return self.matcher.match(key)

    def _value_text(self, text: str, end: int) -> str:
        if isinstance(self.value, _StringValue):
            return self.value.text()
        return text[self.value_start : end].strip()


class AutoReader:
    """AutoAdapter's answers: a JSON object (constrained decoding) or chat sections."""

    def __init__(self, matcher: FieldMatcher) -> None:
        self.matcher = matcher
        self.reader: ChatReader | JSONReader | None = None

    def snapshot(self, text: str) -> Snapshot:
        if self.reader is None:
            start = text.lstrip()[:1]
            if not start:
                return {}
            self.reader = JSONReader(self.matcher) if start in "{`" else ChatReader(self.matcher)
        return self.reader.snapshot(text)


READERS: dict[str, type[ChatReader] | type[XMLReader] | type[JSONReader] | type[AutoReader]] = {
    "chat": ChatReader,
    "json": JSONReader,
    "xml": XMLReader,
    "auto": AutoReader,
}
