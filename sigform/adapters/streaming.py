"""Field-level streaming: which output field the answer is writing, and its text so far.

``adapter.stream_parser(signature)`` returns a :class:`StreamParser`; feed it the text deltas of
a streamed completion and it reports :class:`FieldDelta` objects for every field whose text
grew or which finished. The result does not depend on how the text was chunked (one character
at a time or the whole answer at once): each snapshot is the one the whole-text functions below
give for the text received so far, and text that could still turn into a marker (``[[ ## ...``,
``</field``, an unfinished JSON escape) is held back until it is known. During the stream the
snapshots come from the incremental readers of :mod:`sigform.adapters.stream_readers` (each delta
is read once, not the whole text again: linear over the stream); at the end the whole-text
function reads the text once more. ``text_so_far`` only ever grows, and ``delta`` is what it grew
by; ``text_so_far`` is built when first read, so a consumer of the deltas alone never pays for a
copy of the whole field per event. The typed values come from the adapter's ``parse`` once the
stream ends.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import regex

from sigform.adapters.chat_scan import HEADER_RE, restore_markers
from sigform.adapters.names import FieldMatcher, norm_name
from sigform.adapters.stream_readers import READERS, Snapshot
from sigform.adapters.stream_text import FieldProgress, TextAt, text_of
from sigform.adapters.xml_scan import decode_text

if TYPE_CHECKING:
    from sigform.signatures import Signature

__all__ = ["FieldDelta", "StreamParser"]

_PARTIAL_HEADER_RE = regex.compile(r"(?:\*{1,2}|_{1,2})?\[(?:\[[^\]\n]{0,110}(?:\][^\]\n]?)?)?\Z")
_OPEN_TAG_RE = regex.compile(r"<(?P<name>[A-Za-z_][\w.\-:]{0,80})(?:\s[^<>]*?)?(?P<self>/)?>")
_KEY_RE = regex.compile(r'"(?P<key>(?:[^"\\]|\\.){1,200})"\s*:\s*')


class FieldDelta(FieldProgress):
    """Progress of one output field: ``text_so_far`` (built on first read), ``delta``, ``done``
    and ``replaced`` (see :class:`~sigform.adapters.stream_text.FieldProgress`)."""

    __slots__ = ()
    _text_name = "text_so_far"

    @property
    def text_so_far(self) -> str:
        return self._built()


def _chat_snapshot(text: str, matcher: FieldMatcher) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    headers = list(HEADER_RE.finditer(text))
    for i, match in enumerate(headers):
        if norm_name(match.group("name")) == "completed":
            break
        name = matcher.match(match.group("name"))
        if name is None or name in out:
            continue
        if i + 1 < len(headers):
            out[name] = (restore_markers(text[match.end() : headers[i + 1].start()].strip()), True)
        else:
            body = text[match.end() :]
            partial = _PARTIAL_HEADER_RE.search(body)
            if partial is not None:
                body = body[: partial.start()]
            out[name] = (restore_markers(body.strip()), False)
    return out


def _xml_snapshot(text: str, matcher: FieldMatcher) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    pos = 0
    while True:
        match = _OPEN_TAG_RE.search(text, pos)
        if match is None:
            break
        name = matcher.match(match.group("name"))
        if name is None or name in out:
            pos = match.end()
            continue
        if match.group("self"):
            out[name] = ("", True)
            pos = match.end()
            continue
        close = regex.compile(r"</\s*" + regex.escape(match.group("name")) + r"\s*>", regex.IGNORECASE)
        end = close.search(text, match.end())
        if end is not None:
            out[name] = (decode_text(text[match.end() : end.start()]).strip(), True)
            pos = end.end()
            continue
        body = text[match.end() :]
        cut = body.rfind("<")
        if cut >= 0 and ">" not in body[cut:]:
            body = body[:cut]  # maybe the start of the close tag
        amp = body.rfind("&")
        if amp >= 0 and ";" not in body[amp:] and len(body) - amp <= 10:
            body = body[:amp]  # maybe an unfinished entity
        out[name] = (decode_text(body).strip(), False)
        break
    return out


def _json_string_prefix(text: str, start: int) -> tuple[str, bool, int]:
    """Decode a JSON string starting after its opening quote: (text, closed, end index)."""
    pieces: list[str] = []
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(pieces), True, i + 1
        if ch == "\\":
            if i + 1 >= len(text):
                break
            nxt = text[i + 1]
            if nxt == "u":
                if i + 6 > len(text):
                    break
                try:
                    pieces.append(json.loads(f'"{text[i : i + 6]}"'))
                except ValueError:
                    pieces.append(text[i : i + 6])
                i += 6
                continue
            pieces.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        pieces.append(ch)
        i += 1
    return "".join(pieces), False, len(text)


def _json_value_end(text: str, start: int) -> tuple[int, bool]:
    """End of a non-string JSON value at ``start``: (end index, finished)."""
    depth = 0
    i = start
    in_string = False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth == 0:
                return i, True
            depth -= 1
        elif ch == "," and depth == 0:
            return i, True
        i += 1
    return len(text), False


def _json_snapshot(text: str, matcher: FieldMatcher) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    start = text.find("{")
    if start < 0:
        return out
    pos = start + 1
    while True:
        match = _KEY_RE.search(text, pos)
        if match is None:
            break
        try:
            key = json.loads(f'"{match.group("key")}"')
        except ValueError:
            key = match.group("key")
        name = matcher.match(key)
        value_start = match.end()
        if value_start >= len(text):
            if name is not None and name not in out:
                out[name] = ("", False)
            break
        if text[value_start] == '"':
            value, closed, end = _json_string_prefix(text, value_start + 1)
        else:
            end, closed = _json_value_end(text, value_start)
            value = text[value_start:end].strip()
            if not closed:  # a number or literal may still grow; a structure is shown as written
                value = value if value[:1] in "{[" else ""
        if name is not None and name not in out:
            out[name] = (value, closed)
        if not closed:
            break
        pos = end
    return out


def _auto_snapshot(text: str, matcher: FieldMatcher) -> dict[str, tuple[str, bool]]:
    """AutoAdapter's answers: a JSON object (constrained decoding) or chat sections."""
    start = text.lstrip()[:1]
    if not start:
        return {}
    return (_json_snapshot if start in "{`" else _chat_snapshot)(text, matcher)


_SNAPSHOTS = {"chat": _chat_snapshot, "json": _json_snapshot, "xml": _xml_snapshot, "auto": _auto_snapshot}


class StreamParser:
    """Incremental field parser for one streamed completion (see the module docstring)."""

    def __init__(self, signature: type[Signature], fmt: str) -> None:
        if fmt not in _SNAPSHOTS:
            raise ValueError(f"no stream parser for format {fmt!r}; expected one of {sorted(_SNAPSHOTS)}")
        self.signature = signature
        self.format = fmt
        self._snapshot = _SNAPSHOTS[fmt]
        self._matcher = FieldMatcher(signature.output_fields)
        self._reader = READERS[fmt](self._matcher)
        self._text = ""
        self._state: dict[str, _Shown] = {}

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return self._text

    def feed(self, delta: str) -> list[FieldDelta]:
        """Add ``delta`` and return the fields whose text grew or which finished."""
        if not delta:
            return []
        text, self._text = self._text, ""
        text += delta  # the only reference: CPython grows the string in place, no copy per delta
        self._text = text
        return self._update(self._reader.snapshot(text), final=False)

    def finish(self) -> list[FieldDelta]:
        """The stream ended: every field seen is finished with its full text."""
        snapshot = self._snapshot(self._text + "\n", self._matcher)
        return self._update({name: (text, True) for name, (text, _) in snapshot.items()}, final=True)

    def _update(self, snapshot: Snapshot, final: bool) -> list[FieldDelta]:
        out: list[FieldDelta] = []
        for name in self._matcher.names:
            if name not in snapshot:
                continue
            text, done = snapshot[name]
            old = self._state.get(name)
            if old is not None and (old.done or (old.stuck and not done)):
                continue
            if old is None:
                self._state[name] = _Shown(text, done)
                out.append(FieldDelta(name, text, done, text_of(text)))
            elif done:  # the finished text is reported even when it does not extend what was shown
                whole, shown = text_of(text), text_of(old.text)
                grew = whole.startswith(shown)
                self._state[name] = _Shown(whole, True)
                out.append(FieldDelta(name, whole, True, whole[len(shown) :] if grew else whole, not grew))
            else:
                grew, stuck = _extends(text, old.text)
                if grew:
                    self._state[name] = _Shown(text, False)
                    out.append(FieldDelta(name, text, False, _slice(text, len(old.text), len(text))))
                elif stuck:
                    old.stuck = True
        return out


class _Shown:
    """The text last reported for a field; ``stuck`` once no later text can extend it."""

    __slots__ = ("done", "stuck", "text")

    def __init__(self, text: str | TextAt, done: bool) -> None:
        self.text = text
        self.done = done
        self.stuck = False


def _slice(text: str | TextAt, start: int, stop: int) -> str:
    return text[start:stop] if isinstance(text, str) else text.slice(start, stop)


def _extends(new: str | TextAt, old: str | TextAt) -> tuple[bool, bool]:
    """(``new`` is longer and starts with ``old``; ``new`` never will, whatever text follows).

    When both grow from one source, its first ``old.committed`` characters are shared and never
    change: only the rest of ``old`` (its short tail) is compared.
    """
    if len(new) <= len(old):
        return False, False
    if not (isinstance(new, TextAt) and isinstance(old, TextAt) and new.source is old.source):
        return _slice(new, 0, len(old)) == _slice(old, 0, len(old)), False
    start = old.committed
    if not old.tail or new.slice(start, len(old)) == old.tail:
        return True, False
    final = min(len(old), new.committed)  # new's committed text never changes: a difference there is final
    return False, new.slice(start, final) != old.tail[: final - start]
