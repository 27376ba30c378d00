"""Finding the JSON object that answers a signature inside LM text.

The text may hold prose, code fences, an echoed input object, a placeholder template, braces in
prose, a wrapper (``{"result": {...}}``, ``[{...}]``, ``{"result": "{...}"}``), the whole answer
JSON-encoded as one string, or a cut-off object. We collect every balanced top-level ``{...}``
(:func:`~sigform.adapters.brace_scan.object_spans`, one linear pass aware of strings), read each
one (strict JSON first, json-repair only when needed and within one budget per answer, never
through a truncation), and choose the object whose keys are the output fields: a complete one
over a partial one, a filled one over a placeholder template, the later one over the earlier.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from sigform.adapters.brace_scan import MAX_TOKENS, object_spans
from sigform.adapters.names import FieldMatcher, norm_name
from sigform.adapters.recent_scan import RecentText
from sigform.types.json_text import MAX_REPAIR_CHARS, JSONTextError, parse_json_text

__all__ = ["NOT_JSON", "JSONFind", "find_json_object", "read_pairs", "strict_json"]

_FENCE_LINE_RE = regex.compile(r"^[ \t]*```[^\n`]*$", regex.MULTILINE)
_PLACEHOLDER_RE = regex.compile(
    r"\A\s*(?:\.{3}|…|[{<\[]\s*[\w ]{1,60}\s*[}>\]]|\$?\{\{\s*[\w ]+\s*\}\})\s*\Z"
)
_MAX_WRAP_DEPTH = 2


class _Obj(dict):  # type: ignore[type-arg]
    """A JSON object that remembers keys given twice with different values."""

    conflicts: set[str]


def read_pairs(pairs: list[tuple[str, Any]]) -> _Obj:
    """``object_pairs_hook`` for ``json.loads``: a dict whose ``conflicts`` names keys given twice
    with different values."""
    obj = _Obj()
    obj.conflicts = set()
    for key, value in pairs:
        if key in obj and obj[key] != value:
            obj.conflicts.add(key)
        obj[key] = value
    return obj


@dataclass
class JSONFind:
    """The chosen object: values by declared field name, conflicts, and how much was found."""

    values: dict[str, Any] = field(default_factory=dict)
    conflicts: dict[str, list[Any]] = field(default_factory=dict)
    objects: int = 0  # JSON objects read from the text
    problem: str | None = None  # why a candidate could not be read (cut off, ...)


NOT_JSON = object()  # what a strict read that failed returns (None is JSON's null)
_NOT_JSON_TEXT = RecentText()


def strict_json(text: str) -> Any:
    """``json.loads`` with :func:`read_pairs`, or ``NOT_JSON``. The last text that failed is
    remembered: one answer's whole text can be tried up to five times (the JSON fast path, as is,
    as the only object, as an object that never closes, then by a fallback adapter), and a failing
    read of 1 MB costs ~15 ms each time."""
    if text in _NOT_JSON_TEXT:
        return NOT_JSON
    try:
        return json.loads(text, object_pairs_hook=read_pairs)
    except (ValueError, RecursionError):
        _NOT_JSON_TEXT.remember(text)
        return NOT_JSON


class _Reader:
    """Reads candidate spans: strict JSON always, json-repair within one budget per answer.

    json-repair is pure Python and each candidate could be repaired on its own, so without a
    shared budget a text of many small damaged objects would cost (objects x repair time).
    """

    def __init__(self) -> None:
        self.budget = 2 * MAX_REPAIR_CHARS  # characters json-repair may still read for this text

    def read(self, span: str) -> tuple[object, str | None]:
        value = strict_json(span)
        if value is not NOT_JSON:
            return value, None
        if len(span) > self.budget:  # strict JSON only, and that just failed
            return None, "the value is not valid JSON (no repair budget left for this answer)"
        self.budget -= len(span)
        try:
            return parse_json_text(span, repair=True), None
        except JSONTextError as exc:
            return None, str(exc)


def _single_object(text: str) -> bool:
    """Whether ``text`` has at most one balanced top-level ``{...}`` (braces in strings aside)."""
    return len(object_spans(text)) <= 1  # none: one object cut off, or damage the scan cannot follow


def _candidates(text: str, reader: _Reader) -> tuple[list[object], str | None]:
    stripped = text.strip()
    if stripped[:1] == '"' and stripped[-1:] == '"':  # the whole answer JSON-encoded as one string
        try:
            inner = json.loads(stripped)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, str) and inner.strip()[:1] == "{":
            stripped = text = inner.strip()
    if stripped[:1] in "{[":
        value = strict_json(stripped)
        if value is NOT_JSON:
            # a repaired read of the whole text is only trusted when it holds one top-level
            # object: json-repair reads `{answer} prose {template}` as the *last* object
            value = reader.read(stripped)[0] if _single_object(text) else None
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
            return [value], None
    body = _FENCE_LINE_RE.sub("", text) if "```" in text else text
    spans = object_spans(body)
    if not spans and spans.complete:
        spans = object_spans(body, loose=True)
    if not spans.complete:
        # objects after the bound could change the choice (a later one wins): none is read
        return [], f"the text has over {MAX_TOKENS:,} braces and strings; it was not read as JSON"
    out: list[object] = []
    problem: str | None = None
    for start, end in spans:
        value, why = reader.read(body[start:end])
        if value is not None:
            out.append(value)
        elif why:
            problem = why
    # an object that never closes: read only if every value in it is complete (only `}` missing)
    pos = 0
    for start, end in spans:
        opener = body.find("{", pos, start)
        if opener >= 0:
            break
        pos = end
    else:
        opener = body.find("{", pos)
    if opener >= 0:
        value, why = reader.read(body[opener:].strip())
        if value is not None:
            out.append(value)
        elif why:
            problem = why
    return out, problem


def _unwrap(
    value: object, matcher: FieldMatcher, reader: _Reader, depth: int = 0
) -> dict[str, object] | None:
    """The answer object inside ``value``: itself, a one-element list's item, or a one-key wrapper's."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        return None
    if any(matcher.match(str(k)) for k in value) or depth >= _MAX_WRAP_DEPTH:
        return value
    if len(value) == 1:
        inner = next(iter(value.values()))
        if isinstance(inner, str) and inner.strip()[:1] == "{":  # the answer object given as a JSON string
            inner = reader.read(inner.strip())[0]
        inner = _unwrap(inner, matcher, reader, depth + 1)
        if inner is not None and any(matcher.match(str(k)) for k in inner):
            return inner
    return value


def _is_placeholder(name: str, value: object) -> bool:
    return (
        isinstance(value, str)
        and bool(_PLACEHOLDER_RE.match(value))
        and ("." in value or "…" in value or norm_name(value.strip("{}<>[]$ ")) == norm_name(name))
    )


def _score(
    obj: dict[str, object], matcher: FieldMatcher
) -> tuple[int, int, dict[str, object], dict[str, list[object]]]:
    values: dict[str, object] = {}
    conflicts: dict[str, list[object]] = {}
    for key, value in obj.items():
        name = matcher.match(str(key))
        if name is None:
            continue
        if name in values and values[name] != value:
            conflicts.setdefault(name, [values[name]]).append(value)
        values[name] = value
    for key in getattr(obj, "conflicts", ()):
        name = matcher.match(str(key))
        if name is not None:
            conflicts.setdefault(name, [values.get(name)]).append("(another value under the same key)")
    placeholders = sum(_is_placeholder(n, v) for n, v in values.items())
    return len(values), -placeholders, values, conflicts


def find_json_object(text: str, names: Sequence[str] | FieldMatcher) -> JSONFind:
    """The object in ``text`` that answers fields ``names`` (``objects == 0``: no JSON at all)."""
    matcher = names if isinstance(names, FieldMatcher) else FieldMatcher(names)
    found = JSONFind()
    if "{" not in text:
        return found
    reader = _Reader()
    candidates, found.problem = _candidates(text, reader)
    best: tuple[int, int, int] | None = None
    for index, candidate in enumerate(candidates):
        obj = _unwrap(candidate, matcher, reader)
        if obj is None:
            continue
        found.objects += 1
        count, not_placeholder, values, conflicts = _score(obj, matcher)
        if count == 0:
            continue
        rank = (count, not_placeholder, index)
        if best is None or rank > best:
            best = rank
            found.values, found.conflicts = values, conflicts
    return found
