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
    "split_label",
    "strip_fence",
    "strip_label",
    "unwrap_quotes",
]

# one-key objects whose key is one of these (or the field's own name) are read as wrappers
WRAPPER_KEYS = frozenset({"value", "result", "output", "answer", "data", "response"})
NULL_WORDS = frozenset({"none", "null"})
# answers that say "no value": never an item of a list
NO_VALUE_WORDS = NULL_WORDS | frozenset({"n/a", "na", "nil", "not applicable", "not available", "not stated"})

_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_KEY_JUNK = re.compile(r"[\W_]+")
_BLANKS = re.compile(r"\s*")
_MAX_LAYERS = 16  # quotes, backticks and bold around one scalar


def strip_fence(text: str) -> str:
    """Remove one code fence (any tag) around the whole of ``text`` (already stripped).

    String operations only, so the cost is linear in the text (a regex with a lazy body and a
    blank run before the closing fence was quadratic in the length of that run).
    """
    if not (text.startswith("```") and text.endswith("```")):
        return text
    newline = text.find("\n", 3)
    if newline < 0 or "`" in text[3:newline] or newline + 1 > len(text) - 3:
        return text  # no opening line of its own (tag with a backtick, or the fences overlap)
    return text[newline + 1 : -3].strip()


def unwrap_quotes(text: str) -> str:
    """Remove matching quotes, backticks or ``**bold**`` around the whole of ``text``.

    Layers are peeled by moving two indices and the text is sliced once: slicing per layer
    copied the rest each time (a 400 KB run of backticks or stars took seconds). At most
    ``_MAX_LAYERS`` come off: no answer is wrapped deeper, and what is left fails as a value."""
    i, j = 0, len(text)
    reverse = ""
    for _ in range(_MAX_LAYERS):
        if j - i < 2:
            break
        first = text[i]
        if first in _PAIRS and text[j - 1] == _PAIRS[first]:
            if first in "\"'" and text.find(first, i + 1, j - 1) >= 0:  # "a" and "b": not one value
                break
            i, j = i + 1, j - 1
        elif j - i > 4 and text.startswith("**", i, j) and text.endswith("**", i, j):
            i, j = i + 2, j - 2
        else:
            break
        i = _BLANKS.match(text, i, j).end()  # type: ignore[union-attr]  # \s* always matches
        reverse = reverse or text[::-1]  # blanks before j, found left to right in the reversed text
        j = len(text) - _BLANKS.match(reverse, len(text) - j, len(text) - i).end()  # type: ignore[union-attr]
    return text[i:j]


def key_norm(key: str) -> str:
    """Normal form of a key or label: ``"Start Hour"``, ``"start-hour"``, ``"startHour"`` ->
    ``"starthour"``."""
    return _KEY_JUNK.sub("", key).lower()


_LABEL_WORDS = re.compile(r"[A-Za-z][\w \-]{0,60}")


def split_label(
    text: str, marks: str = ":=", stars: str = "*", words: re.Pattern[str] = _LABEL_WORDS
) -> tuple[str, str] | None:
    """``(label, rest)`` when ``text`` is ``label: rest``, else None.

    The label is all of ``words`` (by default a letter and at most 60 word characters, spaces
    and hyphens) and may be wrapped in ``stars`` (``**Decision:** x``); the separator is the
    first of ``marks``.
    Each step is one linear pass (the regex this replaces backtracked over blank runs around
    its optional ``**`` and cost seconds for a few KB of blanks).
    """
    cut = min((i for i in (text.find(m) for m in marks) if i >= 0), default=-1)
    if cut < 0:
        return None
    label = text[:cut].lstrip(stars).lstrip().rstrip().rstrip(stars).rstrip()
    if not words.fullmatch(label):
        return None
    return label, text[cut + 1 :].lstrip().lstrip(stars).lstrip()


def strip_label(text: str, field: str) -> str:
    """Remove an echoed ``field: `` label (``"Decision: escalate"`` for field ``decision``)."""
    found = split_label(text)
    if found and key_norm(found[0]) == key_norm(field) and found[1].strip():
        return found[1].strip()
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
