"""Model-chosen text shown to a person (approval prompts) without letting it drive the terminal.

A tool argument comes from the LM. Printed raw, ``ESC[1A`` / ``ESC[2K`` (cursor up, erase line), a
carriage return or a bidi override (``U+202E``) can repaint or reorder what the person reads, so the
command they approve would not be the one that runs. Here every character that is not printable
(Unicode categories Cc, Cf, Zl, Zp, Cs, Co, Cn and spaces other than ' ') is shown as an escape,
in a form that reads back to exactly the original text.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

__all__ = ["escape_controls", "shell_line", "shown_value"]


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_controls(text: str, *, keep: str = "") -> str:
    """``text`` with every non-printable character escaped, except those in ``keep`` (e.g. "\\n").

    For text whose layout is the author's (a custom ``describe`` output): unlike :func:`shown_value`
    it adds no quotes, so a backslash already in the text is not doubled.
    """
    if text.isprintable():
        return text
    return "".join(c if c in keep or c.isprintable() else _escape(c) for c in text)


def shown_value(value: object) -> str:
    """A tool argument as a person should read it: text as is when it is all printable, otherwise
    its Python ``repr`` (quoted, every control character escaped, unambiguous)."""
    if isinstance(value, str):
        return value if value.isprintable() else repr(value)
    return escape_controls(repr(value))


def _ansi_c_quote(arg: str) -> str:
    """``$'...'`` quoting (bash, zsh, ksh; POSIX since 2024): control characters as escapes."""
    out = []
    for char in arg:
        if char in "\\'":
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif 0x80 <= ord(char) <= 0xFF:  # bash reads \x85 as the byte 0x85, \u0085 as the character
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(_escape(char))
    return "$'" + "".join(out) + "'"


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one shell command line a person can read and paste: plain arguments quoted with
    ``shlex.quote``, arguments holding non-printable characters in ``$'...'`` form."""
    return " ".join(shlex.quote(a) if a.isprintable() else _ansi_c_quote(a) for a in argv)

