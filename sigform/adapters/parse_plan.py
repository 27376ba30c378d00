"""A fast read of the clean answer, worked out once per signature.

Most answers are exactly what was asked for. In the chat format::

    [[ ## a ## ]]
    ...

    [[ ## b ## ]]
    ...

    [[ ## completed ## ]]

Each header on its own line, the output fields once each and in order, then the completed
marker, and no other ``[[`` anywhere. For such a text the lenient scanner
(:func:`~sigform.adapters.chat_scan.find_sections`) can only find these sections, so a chain of
``str.find`` calls reads them, and the values are coerced with the fields' converters looked up
once. In JSON: the whole text one object (outer blank space aside) whose keys are exactly the
output fields, each once, read by ``json.loads`` as the full parser reads it. Anything else -- a
missing or extra header or key, another order, a fence, a header not at a line start, a value
that does not validate -- returns ``None`` here and the full parser runs, so the result (values
or error) is always the one the full parser gives (tested against it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sigform.adapters.chat_scan import restore_markers
from sigform.adapters.extract_json import NOT_JSON, strict_json
from sigform.adapters.fields import FieldView
from sigform.adapters.names import FieldMatcher
from sigform.types.coercion import FieldCoercer

__all__ = ["ChatParsePlan", "JSONParsePlan", "build_parse_plan"]

_COMPLETED = "[[ ## completed ## ]]"


class ChatParsePlan:
    """The expected headers of one signature's clean chat answer, and its fields' coercer."""

    __slots__ = ("brackets", "coerce", "steps", "top")

    def __init__(self, views: Sequence[FieldView]) -> None:
        headers = [f"[[ ## {v.name} ## ]]" for v in views]
        self.top = headers[0]
        ends = [*headers[1:], _COMPLETED]
        # (field, the length of its header, the header that ends its value)
        self.steps = tuple((v.name, len(h), end) for v, h, end in zip(views, headers, ends, strict=True))
        self.brackets = len(headers) + 1
        self.coerce = FieldCoercer({v.name: v.validation_annotation for v in views})

    def sections(self, text: str) -> dict[str, str] | None:
        """The raw value of every field when ``text`` is a clean answer; else ``None``."""
        if text.count("[[") != self.brackets:
            return None
        start = text.find(self.top)
        if start < 0 or (start and (text[start - 1] != "\n" or text.lstrip().startswith("```"))):
            return None
        values: dict[str, str] = {}
        for name, skip, nxt in self.steps:
            start += skip
            if text[start : start + 1] != "\n":
                return None  # text on the header line (`]]:`, `]]**`, a value): the scanner's job
            end = text.find(nxt, start)
            if end < 0 or text[end - 1] != "\n":
                return None
            values[name] = restore_markers(text[start:end].strip())
            start = end
        return values

    def parse(self, text: str) -> dict[str, Any] | None:
        """Typed values of a clean answer; ``None`` when it is not clean or a value fails."""
        raw = self.sections(text)
        if raw is None:
            return None
        return self.coerce.try_convert(raw)


class JSONParsePlan:
    """The output fields of one signature's clean JSON answer, and their coercer."""

    __slots__ = ("coerce", "names")

    def __init__(self, views: Sequence[FieldView]) -> None:
        self.names = frozenset(v.name for v in views)
        self.coerce = FieldCoercer({v.name: v.validation_annotation for v in views})

    def parse(self, text: str) -> dict[str, Any] | None:
        """Typed values of a clean answer; ``None`` when it is not clean or a value fails."""
        text = text.strip()
        if text[:1] != "{":
            return None
        obj = strict_json(text)  # the full parser's read, conflicts kept
        if obj is NOT_JSON:
            return None
        # every object json.loads builds here comes from read_pairs, with its `conflicts`
        if not isinstance(obj, dict) or getattr(obj, "conflicts", None) or obj.keys() != self.names:
            return None
        return self.coerce.try_convert(obj)


def build_parse_plan(
    fmt: str, views: Sequence[FieldView], matcher: FieldMatcher
) -> ChatParsePlan | JSONParsePlan | None:
    """The plan for answers in ``fmt`` (the format read first), or ``None`` when a clean answer
    could be read another way (no output field, or a field the chat scanner would take for the
    completed marker)."""
    if not views or any(matcher.match(v.name) != v.name for v in views):
        return None
    if fmt == "json":
        return JSONParsePlan(views)
    if fmt == "chat" and matcher.match("completed") is None:
        return ChatParsePlan(views)
    return None
