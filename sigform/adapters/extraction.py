"""Raw field values out of LM text, per format, with format confusion handled in one place.

Each extractor returns the raw value of every output field it found: text for chat sections
and XML leaves, parsed JSON values for JSON, nested dicts/lists for XML elements. An adapter
tries its own format first; only when that finds no output field at all are the other formats
tried (a model asked for JSON may answer in XML or chat headers), so a partial answer in the
requested format is reported as partial, not reread as something else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sigform.adapters.chat_scan import BLANK_LINE_RE, find_labels, find_sections, has_header
from sigform.adapters.extract_json import find_json_object
from sigform.adapters.fields import CLOSED_KINDS, FieldView, kind_of
from sigform.adapters.names import FieldMatcher
from sigform.adapters.xml_scan import MAX_DEPTH, MAX_ELEMENTS, MAX_LESS_THAN, Element, decode_text, scan

__all__ = ["EXTRACTORS", "Extracted", "extract"]


@dataclass
class Extracted:
    values: dict[str, Any] = field(default_factory=dict)
    conflicts: dict[str, list[Any]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # field -> structural problem (cut off)
    fmt: str = ""
    completed: bool = False  # chat: the completed marker was seen
    note: str | None = None  # why nothing could be read (e.g. a cut-off JSON object)


# kinds whose value is one short token: a later paragraph cannot belong to it
_TOKEN_KINDS = frozenset({"int", "float", "bool", "choice"})


def _chat(text: str, matcher: FieldMatcher, views: Sequence[FieldView]) -> Extracted:
    sections = find_sections(text, matcher)
    last = sections.last
    if last is not None and last in sections.values:
        # no completed marker after the last section: prose after a one-token value is not part of it
        view = next(v for v in views if v.name == last)
        blank = BLANK_LINE_RE.search(sections.values[last]) if view.kind in _TOKEN_KINDS else None
        if blank is not None:
            sections.values[last] = sections.values[last][: blank.start()].rstrip()
    return Extracted(
        sections.values, sections.conflicts, fmt="chat", completed=sections.completed, note=sections.note
    )


def _labels(text: str, matcher: FieldMatcher, views: Sequence[FieldView]) -> Extracted:
    if has_header(text):  # labels count only where no bracket header is used
        return Extracted(fmt="labels")
    sections = find_labels(text, matcher)
    return Extracted(sections.values, sections.conflicts, fmt="labels", note=sections.note)


def _json(text: str, matcher: FieldMatcher, views: Sequence[FieldView]) -> Extracted:
    found = find_json_object(text, matcher)
    return Extracted(found.values, found.conflicts, fmt="json", note=found.problem)


# ---- XML -----------------------------------------------------------------------------------------


def _model_fields(annotation: object) -> dict[str, object]:
    fields = getattr(annotation, "model_fields", None)
    return {name: info.annotation for name, info in fields.items()} if fields else {}


def _base(annotation: object) -> object:
    from sigform.types.inspection import split_optional, strip_annotated

    base, _ = strip_annotated(annotation)
    base, _ = split_optional(base)
    return strip_annotated(base)[0]


def _item_annotation(annotation: object, index: int) -> object:
    from sigform.types.inspection import args_of

    args = args_of(_base(annotation))
    if not args:
        return Any
    return args[-1] if index < 0 else args[0]


def _generic(el: Element, text: str) -> object:
    """An element whose type gives no guidance: text, or children as a dict or a list."""
    if not el.children:
        return None if el.self_closing else decode_text(text[el.start : el.end]).strip()
    keys = [c.key for c in el.children]
    if len(set(keys)) == len(keys) and not all(k == "item" for k in keys):
        return {c.name: _generic(c, text) for c in el.children}
    return [_generic(c, text) for c in el.children]


def element_value(el: Element, text: str, annotation: object, kind: str | None = None) -> object:
    """The raw value of an element, guided by the annotation it must become (of ``kind``, when
    the caller knows it)."""
    if kind is None:
        kind, _ = kind_of(annotation)
    if el.self_closing:
        return dict(el.attrs) if el.attrs and kind in ("model", "dict", "other") else None
    if kind == "list" and el.children:
        item = _item_annotation(annotation, 0)
        return [element_value(c, text, item) for c in el.children]
    if kind == "dict" and el.children:
        value_ann = _item_annotation(annotation, -1)
        pairs = [(c.name, element_value(c, text, value_ann)) for c in el.children]
        if len({k for k, _ in pairs}) < len(pairs):
            # a key given twice (`<item>` children, say): the value engine's key/value-list form
            # rejects differing values instead of the last one silently winning
            return [{"key": k, "value": v} for k, v in pairs]
        return dict(pairs)
    if kind == "model" and (el.children or el.attrs):
        base = _base(annotation)
        fields = _model_fields(base)
        matcher = FieldMatcher(fields)
        out: dict[str, object] = dict(el.attrs)
        if el.children:
            for child in el.children:
                name = matcher.match(child.name)
                out[name or child.name] = element_value(child, text, fields.get(name, Any) if name else Any)
        return out
    if kind == "other" and el.children:
        return _generic(el, text)
    return decode_text(text[el.start : el.end]).strip()


def _xml(text: str, matcher: FieldMatcher, views: Sequence[FieldView]) -> Extracted:
    out = Extracted(fmt="xml")
    if "<" not in text:
        return out
    by_name = {v.name: v for v in views}
    root = scan(text)
    if not root.complete:
        # what lies past the bound could hold another value for a field: nothing is read
        out.note = (
            f"the text has over {MAX_ELEMENTS:,} tags, over {MAX_LESS_THAN:,} `<` or nests over "
            f"{MAX_DEPTH} deep; it was not read as XML"
        )
        return out
    level = root.children
    while level and len(out.values) < len(by_name):
        next_level: list[Element] = []
        claimed: dict[str, object] = {}
        for el in level:
            name = matcher.match(el.name)
            if name is None or name in out.values:
                next_level.extend(el.children)
                continue
            view = by_name[name]
            if not el.closed and el.end == len(text) and view.kind not in CLOSED_KINDS:
                out.problems[name] = "the value is cut off (its closing tag never comes)"
            value = element_value(el, text, view.annotation, view.kind)
            if name in claimed and claimed[name] != value:
                if value not in (None, "") and claimed[name] not in (None, ""):
                    out.conflicts.setdefault(name, [claimed[name]]).append(value)
                elif claimed[name] in (None, ""):
                    claimed[name] = value
            else:
                claimed[name] = value
        out.values.update(claimed)
        level = next_level
    return out


EXTRACTORS: dict[str, Callable[[str, FieldMatcher, Sequence[FieldView]], Extracted]] = {
    "chat": _chat,
    "json": _json,
    "xml": _xml,
    "labels": _labels,
}


def extract(text: str, views: Sequence[FieldView], matcher: FieldMatcher, order: Sequence[str]) -> Extracted:
    """Raw values from ``text``, trying the formats in ``order`` until one finds an output field."""
    first: Extracted | None = None
    for fmt in order:
        found = EXTRACTORS[fmt](text, matcher, views)
        if found.values or found.conflicts:
            if first is not None and first.note and not found.note:
                found.note = first.note
            return found
        if first is None:
            first = found
        elif not first.note:
            first.note = found.note  # why a later format could not read the text either
    assert first is not None
    return first
