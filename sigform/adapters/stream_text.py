"""A streamed field's text, kept so that each delta costs time in proportion to the delta.

A field's text so far is ``committed + tail``: ``committed`` (a :class:`GrowingText`) is text that
later deltas can never change, kept as pieces and joined only when someone reads it; ``tail`` is
the few characters at the end that may still change (a marker or an entity cut off) and is
rebuilt per delta. An event records where the committed text stood and its tail
(:class:`TextAt`), and builds its full text only when it is read: a consumer that only reads the
events' deltas never pays for a copy of the whole field per event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["FieldProgress", "GrowingText", "OpenText", "TextAt", "text_of"]


class GrowingText:
    """Text that only grows: appended pieces, joined on the first read after they were added.

    Every ``MERGE`` appended pieces are merged into one (a delta is a few characters: a piece
    object each would take ~15x the text's memory). Events may be read in another thread than
    the one feeding the parser: joining (a read), merging and slicing (the feeding thread's
    deltas) hold a lock, and each replaces exactly the pieces it joined, so a piece appended
    meanwhile is kept.
    """

    MERGE = 64

    __slots__ = ("_lock", "_pieces", "_unmerged", "length")

    def __init__(self, text: str = "") -> None:
        self._pieces: list[str] = [text] if text else []
        self.length = len(text)
        self._unmerged = 0  # pieces appended since the last merge or join
        self._lock = threading.Lock()

    def append(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
            self.length += len(piece)
            self._unmerged += 1
            if self._unmerged >= self.MERGE:
                with self._lock:
                    pieces, count = self._pieces, min(self._unmerged, len(self._pieces))
                    pieces[-count:] = ["".join(pieces[-count:])]
                    self._unmerged = 0

    def prefix(self, n: int) -> str:
        """The first ``n`` characters (joins the pieces once; a later read of them is free)."""
        if n <= 0:
            return ""
        with self._lock:
            pieces = self._pieces
            count = len(pieces)
            if count > 1:
                pieces[:count] = ["".join(pieces[:count])]
                self._unmerged = len(pieces) - 1
            whole = pieces[0]
        return whole if n >= len(whole) else whole[:n]

    def slice(self, start: int, stop: int) -> str:
        """Characters ``start:stop``, read from the nearer end without joining the rest."""
        with self._lock:
            return self._slice(start, min(stop, self.length))

    def _slice(self, start: int, stop: int) -> str:
        if start >= stop:
            return ""
        out: list[str] = []
        if start >= self.length - stop:  # nearer the end: walk the pieces backwards
            end = self.length
            for piece in reversed(self._pieces):
                begin = end - len(piece)
                if begin < stop:
                    out.append(piece[max(start - begin, 0) : stop - begin])
                if begin <= start:
                    break
                end = begin
            out.reverse()
        else:
            begin = 0
            for piece in self._pieces:
                end = begin + len(piece)
                if end > start:
                    out.append(piece[max(start - begin, 0) : stop - begin])
                if end >= stop:
                    break
                begin = end
        return "".join(out)


class TextAt:
    """A field's text at one event: the first ``committed`` characters of ``source``, then ``tail``."""

    __slots__ = ("_text", "committed", "length", "source", "tail")

    def __init__(self, source: GrowingText, committed: int, tail: str) -> None:
        self.source = source
        self.committed = committed
        self.tail = tail
        self.length = committed + len(tail)
        self._text: str | None = None

    def __len__(self) -> int:
        return self.length

    def text(self) -> str:
        if self._text is None:
            self._text = self.source.prefix(self.committed) + self.tail
        return self._text

    def slice(self, start: int, stop: int) -> str:
        """Characters ``start:stop`` of the text, without building the rest."""
        if self._text is not None:
            return self._text[start:stop]
        if start >= self.committed:
            return self.tail[start - self.committed : stop - self.committed]
        head = self.source.slice(start, min(stop, self.committed)) if start < self.committed else ""
        return head + self.tail[max(start - self.committed, 0) : max(stop - self.committed, 0)]


def text_of(value: str | TextAt) -> str:
    return value if isinstance(value, str) else value.text()


class OpenText:
    """``decode(raw).strip()`` of the field still being written, read as its raw text grows.

    The reader says, per delta, where the field's visible raw text ends (``end``) and up to where
    decoding is final (``safe`` <= ``end``: no entity, marker or comment crosses it, whatever
    follows). Raw text before ``safe`` is decoded once into ``committed``; only ``raw[safe:end]``
    is decoded again. Blanks are held apart (``blanks``) until text follows them, as ``strip``
    would drop them at the end.
    """

    __slots__ = ("blanks", "committed", "decode", "raw_pos", "start", "tail")

    def __init__(self, start: int, decode: Callable[[str], str]) -> None:
        self.start = start  # where the field's raw text starts
        self.committed = GrowingText()
        self.blanks: list[str] = []  # decoded blanks after the committed text
        self.raw_pos = start  # raw text before this is in `committed` or `blanks`
        self.decode = decode
        self.tail = ""

    def update(self, text: str, safe: int, end: int) -> TextAt:
        if safe > self.raw_pos:
            self._commit(self.decode(text[self.raw_pos : safe]))
            self.raw_pos = safe
        rest = self.decode(text[self.raw_pos : end]).rstrip() if end > self.raw_pos else ""
        if not self.committed.length:
            self.tail = rest.lstrip()
        elif rest:
            self.tail = "".join(self.blanks) + rest if self.blanks else rest
        else:
            self.tail = ""
        return TextAt(self.committed, self.committed.length, self.tail)

    def _commit(self, piece: str) -> None:
        if not self.committed.length:
            piece = piece.lstrip()  # leading blanks are never shown
        body = piece.rstrip()
        if body:
            if self.blanks:
                self.committed.append("".join(self.blanks))
                self.blanks.clear()
            self.committed.append(body)
            piece = piece[len(body) :]
        if piece and self.committed.length:
            self.blanks.append(piece)


class FieldProgress:
    """One field's progress in a stream: ``field``, its text so far (built on first read),
    ``delta`` (the text added since the field's previous event), ``done``, and ``replaced`` on the
    rare finishing event whose text does not extend what was shown (text that turned out to belong
    to a marker, such as ``**`` before a header): its ``delta`` is then the whole text.

    Equality and hashing look at the field, the text and ``done``, not at the delta.
    """

    __slots__ = ("_text", "delta", "done", "field", "replaced")
    _text_name = "text"  # what subclasses call the text so far, for the repr

    def __init__(
        self,
        field: str,
        text: str | TextAt,
        done: bool = False,
        delta: str | None = None,
        replaced: bool = False,
    ) -> None:
        self.field = field
        self._text = text
        self.done = done
        self.delta = text_of(text) if delta is None else delta
        self.replaced = replaced

    def _built(self) -> str:
        if isinstance(self._text, TextAt):
            self._text = self._text.text()
        return self._text

    def unbuilt_text(self) -> str | TextAt:
        """The text so far, or what builds it if nobody has read it yet (passed on without a copy)."""
        return self._text

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, FieldProgress)
        return (self.field, self._built(), self.done) == (other.field, other._built(), other.done)

    def __hash__(self) -> int:
        return hash((self.field, self._built(), self.done))

    def __repr__(self) -> str:
        text = self._built()
        return f"{type(self).__name__}(field={self.field!r}, {self._text_name}={text!r}, done={self.done!r})"
