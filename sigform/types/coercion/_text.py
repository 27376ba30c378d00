"""Cleaning of LM text before a value is read from it.

These helpers remove what a careful reader ignores: outer whitespace, a code fence around
the whole value, quotes/backticks/bold around a scalar, an echoed ``label:`` and trailing
sentence punctuation. They never guess: each one only strips wrapping that is complete.
"""

from __future__ import annotations

import re

__all__ = [
    "NO_VALUE_WORDS",
    "NULL_WORDS",
    "WRAPPER_KEYS",
    "clean_scalar",
    "key_norm",
    "strip_fence",
    "strip_label",
    "unwrap_quotes",
]

# one-key objects whose key is one of these (or the field's own name) are read as wrappers
WRAPPER_KEYS = frozenset({"value", "result", "output", "answer", "data", "response"})
NULL_WORDS = frozenset({"none", "null"})
# answers that say "no value": never an item of a list
NO_VALUE_WORDS = NULL_WORDS | frozenset({"n/a", "na", "nil", "not applicable", "not available", "not stated"})

_FENCE = re.compile(r"\A```[^\n`]*\n(.*?)\n?[ \t]*```\Z", re.S)
_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_KEY_JUNK = re.compile(r"[\W_]+")


def strip_fence(text: str) -> str:
    """Remove one code fence (any tag) around the whole of ``text`` (already stripped)."""
    if text.startswith("```"):
        m = _FENCE.match(text)
        if m:
            return m.group(1).strip()
    return text


def unwrap_quotes(text: str) -> str:
    """Remove matching quotes, backticks or ``**bold**`` around the whole of ``text``."""
    while len(text) >= 2:
        first = text[0]
        if first in _PAIRS and text[-1] == _PAIRS[first] and len(text) >= 2:
            inner = text[1:-1]
            if first in "\"'" and first in inner:  # "a" and "b": not one quoted value
                return text
            text = inner.strip()
        elif text.startswith("**") and text.endswith("**") and len(text) > 4:
            text = text[2:-2].strip()
        else:
            return text
    return text


def key_norm(key: str) -> str:
    """Normal form of a key or label: ``"Start Hour"``, ``"start-hour"``, ``"startHour"`` ->
    ``"starthour"``."""
    return _KEY_JUNK.sub("", key).lower()


_LABEL = re.compile(r"\A\**\s*([A-Za-z][\w \-]{0,60}?)\s*\**\s*[:=]\s*\**\s*(.*)\Z", re.S)


def strip_label(text: str, field: str) -> str:
    """Remove an echoed ``field: `` label (``"Decision: escalate"`` for field ``decision``)."""
    if ":" not in text and "=" not in text:
        return text
    m = _LABEL.match(text)
    if m and key_norm(m.group(1)) == key_norm(field) and m.group(2).strip():
        return m.group(2).strip()
    return text


def clean_scalar(text: str, field: str, *, punctuation: bool = False) -> str:
    """Strip whitespace, fence, quotes, an echoed label and (optionally) trailing ``.!;,``."""
    text = unwrap_quotes(strip_fence(text.strip()))
    text = unwrap_quotes(strip_label(text, field))
    if punctuation:
        stripped = text.rstrip(".!;,")
        if stripped != text:
            text = unwrap_quotes(stripped.rstrip())
    return text
