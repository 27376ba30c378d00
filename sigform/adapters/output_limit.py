"""The output-token limit of a request, and what a length stop means.

A small model can loop until the context window is full (minutes per answer on a CPU). So when
neither the call, the program nor the LM sets ``max_tokens`` (or ``max_completion_tokens``), a
request from a :class:`sigform.LM` gets a default limit derived from the signature's outputs: a
bounded answer for scalar fields, more for text, most for lists, dicts and models. Models with
native reasoning get none (their hidden reasoning counts against the same limit). ``max_tokens=N``
anywhere sets your own; ``max_tokens=None`` sends no limit at all.

When an answer stops at the limit (``finish_reason='length'``), :func:`length_message` says what
happened - a repetition loop, the default limit, your limit, or the provider's - and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sigform.adapters.fields import field_views
from sigform.errors import FieldError

if TYPE_CHECKING:
    from sigform.signatures import Signature

__all__ = [
    "LIMIT_KEYS",
    "TEXT_FIELD_TOKENS",
    "OutputLimit",
    "default_output_limit",
    "errors_after_cut",
    "length_message",
    "read_before_cut",
    "repeated_tail",
    "resolve_output_limit",
]

LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
# tokens per output field, by kind; the field's header/markers fit in each budget
_SCALAR_TOKENS = 24  # bool, int, float, a Literal/enum value, a date or time
TEXT_FIELD_TOKENS = 256  # a str (a sentence to a few paragraphs), reasoning included
_STRUCTURED_TOKENS = 512  # lists, dicts, models, tool calls
_ANSWER_OVERHEAD = 32  # the closing marker, JSON braces, a stray preamble
_SCALAR_KINDS = frozenset({"bool", "int", "float", "choice", "date", "datetime", "time"})
_TEXT_KINDS = frozenset({"str", "media", "history"})


@dataclass(frozen=True)
class OutputLimit:
    """The limit a request was sent with and whose it was."""

    tokens: int | None  # None: no limit sent (the provider's own applies)
    source: Literal["default", "yours", "none"]


def default_output_limit(signature: type[Signature]) -> int:
    """The default ``max_tokens`` for ``signature``: 24 tokens per scalar output field, 256 per
    text field, 512 per list/dict/model field, plus 32."""
    total = _ANSWER_OVERHEAD
    for view in field_views(signature)[1]:
        if view.kind in _SCALAR_KINDS:
            total += _SCALAR_TOKENS
        elif view.kind in _TEXT_KINDS:
            total += TEXT_FIELD_TOKENS
        else:
            total += _STRUCTURED_TOKENS
    return total


def resolve_output_limit(lm: Any, signature: type[Signature], lm_kwargs: Mapping[str, object]) -> OutputLimit:
    """The limit for a request of ``signature`` to ``lm`` with the program/call ``lm_kwargs``."""
    for source in (lm_kwargs, getattr(lm, "kwargs", None) or {}):
        for key in LIMIT_KEYS:
            if key in source:
                value = source[key]
                return OutputLimit(value, "yours") if isinstance(value, int) else OutputLimit(None, "none")
    if not getattr(lm, "default_output_limit", False) or lm.supports("reasoning"):
        return OutputLimit(None, "none")
    return OutputLimit(default_output_limit(signature), "default")


def repeated_tail(text: str, *, min_repeats: int = 4, max_unit: int = 1000) -> tuple[str, int] | None:
    """``(unit, times)`` when ``text`` ends in ``unit`` written ``times`` times in a row
    (whitespace-insensitive): at least ``min_repeats`` times for a short unit, 3 for a unit of 50
    characters or more (a small model echoing its prompt), and the repetition is at least a third
    of the text; else None."""
    squeezed = " ".join(text.split())
    tail = squeezed[-6000:]
    n = len(tail)
    for period in range(1, min(max_unit, n // 3) + 1):
        run = period
        while run < n and tail[n - 1 - run] == tail[n - 1 - run + period]:
            run += 1
        times = run // period
        needed = min_repeats if period < 50 else 3
        if times >= needed and run >= max(40, len(squeezed) // 3):
            start = n - run  # where the repetition starts, so the unit reads naturally
            unit = tail[start : start + period]
            return unit.strip() or unit, times
    return None


def length_message(text: str, limit: OutputLimit) -> str:
    """Why a length-stopped answer ended and what to do, for an error message."""
    loop = repeated_tail(text) if text.strip() else None
    if loop is not None:
        unit, times = loop
        shown = unit if len(unit) <= 80 else unit[:77] + "..."
        where = f" at max_tokens={limit.tokens}" if limit.tokens is not None else ""
        return (
            f"the model fell into a repetition loop ({shown!r} {times} times) and was stopped{where}; "
            "a higher limit would not help: give demos of the answer format, try sf.JSONAdapter() "
            "(grammar-constrained on the embedded model), or use a larger model"
        )
    if limit.source == "default":
        return (
            f"the answer was cut off at sigform's default output limit for this signature "
            f"(max_tokens={limit.tokens}, finish_reason='length'); if the answer really is this long, "
            "set a higher max_tokens on the LM, the program or the call"
        )
    if limit.source == "yours":
        return (
            f"the answer was cut off by your output limit (max_tokens={limit.tokens}, "
            "finish_reason='length'); raise max_tokens"
        )
    return (
        "the answer was cut off by the provider's output or context limit (no max_tokens was sent, "
        "finish_reason='length'); shorten the prompt or ask for a shorter answer"
    )


def read_before_cut(text: str) -> tuple[dict[str, Any], str | None]:
    """The key/value pairs of a cut-off JSON object that were complete before the cut, and the
    key whose value the cut fell in (None if the cut fell between pairs). Strict JSON only, read
    pair by pair from the first ``{``: for an error message, never for the answer."""
    decode = json.JSONDecoder().raw_decode
    pos = text.find("{")
    done: dict[str, object] = {}
    if pos < 0:
        return done, None
    pos += 1
    while True:
        pos = _skip_blank(text, pos)
        if text[pos : pos + 1] == ",":
            pos = _skip_blank(text, pos + 1)
        try:
            key, pos = decode(text, pos)
        except (ValueError, RecursionError):
            return done, None
        pos = _skip_blank(text, pos)
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            return done, None
        try:
            value, pos = decode(text, _skip_blank(text, pos + 1))
        except (ValueError, RecursionError):
            return done, key
        if _skip_blank(text, pos) >= len(text) and type(value) in (int, float):
            return done, key  # a number at the very end may be cut short (12 of 1234)
        done[key] = value


def _skip_blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def errors_after_cut(errors: list[FieldError], text: str) -> tuple[list[FieldError], int]:
    """``errors`` of an answer cut off by the output limit, with "missing" fields told apart: one
    whose value was read before the cut shows it, the one the cut fell in says so, the others
    were never reached (a cut-off JSON object is not read at all, so every field looked missing
    while the raw text held some of them). Also returns how many fields were read before the cut."""
    from sigform.excerpt import shorten
    from sigform.types.coercion import key_norm

    done, cut = read_before_cut(text) if "{" in text else ({}, None)
    by_norm = {key_norm(k): v for k, v in done.items()}
    out = []
    read = 0
    for error in errors:
        if error.message != "the field is missing":
            out.append(error)
            continue
        name = key_norm(error.field)
        if name in by_norm:
            seen = shorten(json.dumps(by_norm[name], ensure_ascii=False), 80)
            message = "read before the cut, but not used: the answer as a whole was cut off"
            read += 1
        elif cut is not None and key_norm(cut) == name:
            seen, message = f"{text[-40:]!r} at the cut", "cut off in the middle of its value"
        else:
            seen, message = "(nothing)", "not reached before the cut"
        out.append(FieldError(error.field, error.expected, seen, message))
    return out, read
