"""Incremental snapshots for :class:`~sigform.adapters.streaming.StreamParser`: linear over a stream.

Each reader gives, for the text received so far, the same ``{field: (text, done)}`` as the
matching whole-text snapshot in :mod:`sigform.adapters.streaming`, but it remembers what is
settled (finished fields, the position up to which no marker can still start) and on the next
delta reads only from there. A marker that may still be completing at the end of the text (a
header, a tag or a key cut off, found with the ``regex`` module's partial matching) is read again
once more text arrives. Python work per delta is proportional to the delta; the open field's
text is still cut and stripped once per delta (C string operations, like the copy of it each
event carries).
"""

from __future__ import annotations

import json
from typing import Any

import regex

from sigform.adapters.chat_scan import HEADER_RE, restore_markers
from sigform.adapters.names import FieldMatcher, norm_name
from sigform.adapters.xml_scan import decode_text

__all__ = ["READERS", "ChatReader", "JSONReader", "XMLReader"]

Snapshot = dict[str, tuple[str, bool]]

# the header pattern in the engine that can say "a match could still complete here"
_HEADER_PARTIAL = regex.compile(HEADER_RE.pattern)
_PARTIAL_HEADER_RE = regex.compile(r"(?:\*{1,2}|_{1,2})?\[(?:\[[^\]\n]{0,110}(?:\][^\]\n]?)?)?\Z")
_PARTIAL_MAX = 120  # the longest text _PARTIAL_HEADER_RE can match


def held_back_header(body: str) -> str:
    """``body`` without a header that may be starting at its end (only the last characters are read)."""
    partial = _PARTIAL_HEADER_RE.search(body, max(0, len(body) - _PARTIAL_MAX))
    return body if partial is None else body[: partial.start()]


class ChatReader:
    """``[[ ## field ## ]]`` sections, read as they arrive."""

    def __init__(self, matcher: FieldMatcher) -> None:
        self.matcher = matcher
        self.done: Snapshot = {}  # fields closed by a later header
        self.pos = 0  # the next header starts here or later
        self.open: str | None = None  # the field whose body runs on (None: text after a skipped header)
        self.body_start = 0
        self.stopped = False  # the completed marker was read

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
            out[self.open] = (restore_markers(held_back_header(text[self.body_start :]).strip()), False)
        return out

    def _header(self, text: str, match: Any, done: Snapshot) -> None:
        """A header ends the open section and starts the next one (or stops the reading)."""
        if self.open is not None and self.open not in done:
            done[self.open] = (restore_markers(text[self.body_start : match.start()].strip()), True)
        self.open = None
        written = match.group("name")
        if norm_name(written) == "completed":
            self.stopped = True
            return
        name = self.matcher.match(written)
        if name is not None and name not in done:
            self.open, self.body_start = name, match.end()


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
        # the open element's text decoded up to a point no entity crosses (while it has no `<`)
        self.decoded = ""
        self.decoded_to = 0
        self.lt_from = 0  # no `<` in the open element's text before here

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
                self.close_from = self.decoded_to = self.lt_from = match.end()
                self.decoded = ""
            end = self.close.search(text, self.close_from, partial=True)
            if end is None or end.partial:
                self.close_from = len(text) if end is None else end.start()
                break
            self.done[self.open] = (decode_text(text[self.body_start : end.start()]).strip(), True)
            self.open, self.pos = None, end.end()
        out = dict(self.done)
        if self.open is not None:
            out[self.open] = (self._open_text(text), False)
        return out

    def _open_text(self, text: str) -> str:
        """The open element's text so far, as ``_xml_snapshot`` reads it."""
        lt = text.find("<", self.lt_from)
        self.lt_from = len(text) if lt < 0 else lt
        if lt >= 0:  # a `<` in it (CDATA, a comment, a cut-off close tag): read it whole
            body = text[self.body_start :]
            cut = body.rfind("<")
            if cut >= 0 and ">" not in body[cut:]:
                body = body[:cut]  # maybe the start of the close tag
            amp = body.rfind("&")
            if amp >= 0 and ";" not in body[amp:] and len(body) - amp <= 10:
                body = body[:amp]  # maybe an unfinished entity
            return decode_text(body).strip()
        end = len(text)
        amp = text.rfind("&", max(self.body_start, end - 10))
        if amp >= 0 and text.find(";", amp) < 0:
            end = amp  # maybe an unfinished entity
        # decode up to a point no entity can cross (an entity is at most 40 characters)
        settled = max(self.decoded_to, end - 40)
        amp = text.rfind("&", max(self.decoded_to, settled - 40), settled)
        if amp >= 0 and text.find(";", amp, settled) < 0:
            settled = amp
        if settled > self.decoded_to:
            self.decoded += decode_text(text[self.decoded_to : settled])
            self.decoded_to = settled
        return (self.decoded + decode_text(text[self.decoded_to : end])).strip()


_KEY_PARTIAL = regex.compile(r'"(?P<key>(?:[^"\\]|\\.){1,200})"\s*:\s*')
_PLAIN = regex.compile(r'[^"\\]+')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class _StringValue:
    """A JSON string value decoded as it arrives (runs of plain characters in one step)."""

    def __init__(self, start: int) -> None:
        self.pos = start  # after the opening quote
        self.pieces: list[str] = []
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
        if len(self.pieces) > 64:  # keep the joins cheap
            self.pieces[:] = ["".join(self.pieces)]

    def text(self) -> str:
        return "".join(self.pieces)


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
                out[self.key] = (self.value.text(), False)
            else:  # a number or literal may still grow; a structure is shown as written
                value = text[self.value_start :].strip()
                out[self.key] = (value if value[:1] in "{[" else "", False)
        return out

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
