"""Short, one-line excerpts of values for error messages, reprs and tables.

A value seen in an LM answer or an input may be megabytes long or span many lines; a message
shows its head and tail on one line (``"abc ... xyz"``), never the whole value.
"""

from __future__ import annotations

__all__ = ["shorten"]

_SHOW_CHARS = 160


def shorten(text: object, limit: int = _SHOW_CHARS) -> str:
    """Return ``text`` as a one-glance string: repr-like, at most ``limit`` characters."""
    s = text if isinstance(text, str) else repr(text)
    if len(s) > 4 * limit >= 64:
        s = s[:limit] + s[-limit:]  # only its ends show: escape those, not all of a 1 MB completion
    s = s.replace("\r", "\\r").replace("\n", "\\n")
    if len(s) > limit:
        head = limit * 2 // 3
        tail = limit - head - 5
        s = f"{s[:head]} ... {s[-tail:]}"
    if not s.isascii():  # a lone surrogate would make the message itself unprintable: escape it
        s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s
