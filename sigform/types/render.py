"""Rendering values into prompt text.

``str`` as is; numbers and booleans plainly; enums by value; dates in ISO 8601; a list of
simple one-line strings as numbered items; everything else (dicts, other lists, models,
dataclasses) as one line of JSON. The output is always something :func:`coerce` reads back to
the same value for the same annotation (outer whitespace of a ``str`` excepted: text formats
do not keep it). Where plain text would be ambiguous (a string in quotes, a string that would
read as ``None`` or a number in a ``Union``), the string is written as a JSON string literal.

Values of types with a ``__sigform_render__`` hook (media, tools, reasoning) are written the way
the hook says, wherever they are: a list of them one after another, one per line; nested in a
dict, list, model or dataclass, as their own text inside the JSON (an image is its short
placeholder there, never its base64 content; adapters send media as content parts).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import typing
from collections import abc as cabc
from typing import Any

from sigform.types.inspection import is_union, split_optional, strip_annotated

__all__ = ["PROMPT_CONTEXT", "render_value"]

# serialization context of prompt rendering: media inside a structure become their placeholder.
# Defined here, not in media.py, so rendering plain values never imports the media models.
PROMPT_CONTEXT = {"sigform_prompt": True}

_LINE_BREAKS = frozenset("\n\r")


def render_value(value: object, annotation: object = None) -> str:
    """Write ``value`` for a prompt; ``coerce(render_value(x, T), T) == x``."""
    if type(value) is str and (annotation is str or annotation is None):  # the common case, in short
        return plain_text(value)
    hook = getattr(type(value), "__sigform_render__", None)
    if hook is not None:
        rendered = hook(value)
        if not isinstance(rendered, str):
            got = type(rendered).__name__
            raise TypeError(f"{type(value).__name__}.__sigform_render__ returned {got}, not str")
        return rendered
    if isinstance(value, (list, tuple)) and value and all(_hooked(v) for v in value):
        return "\n".join(type(v).__sigform_render__(v) for v in value)
    numbered, ambiguous = (True, False) if annotation is None else _annotation_rules(annotation)
    text = _render(value, numbered)
    if ambiguous and isinstance(value, str):
        text = _disambiguate(value, text, annotation)
    return text


def plain_text(value: str) -> str:
    """A ``str`` value of a ``str`` field: as is, or as a JSON string when it is itself in quotes."""
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return json.dumps(value, ensure_ascii=False)  # else the quotes would be read as wrapping
    return value


# id(annotation) -> (annotation, (numbered, ambiguous)): what render_value asks of an annotation,
# answered once per annotation (the strong reference keeps the id unique; unhashable ones work too)
_RULES: dict[int, tuple[object, tuple[bool, bool]]] = {}
_MAX_RULES = 4096


def _annotation_rules(annotation: object) -> tuple[bool, bool]:
    """``(numbered, ambiguous)``: whether lists of plain strings are written as numbered items, and
    whether a ``str`` value may read as another member (a Union, Any) and needs checking."""
    hit = _RULES.get(id(annotation))
    if hit is not None and hit[0] is annotation:
        return hit[1]
    base, _ = strip_annotated(annotation)
    ambiguous = base is not str and (is_union(base) or base is Any or base is object)
    rules = (_numbered_ok(annotation), ambiguous)
    if len(_RULES) >= _MAX_RULES:
        _RULES.clear()
    _RULES[id(annotation)] = (annotation, rules)
    return rules


def _hooked(value: object) -> bool:
    return getattr(type(value), "__sigform_render__", None) is not None


def _fallback(value: object) -> object:
    """How the JSON encoder writes a value it does not know: by its render hook, else ``str``."""
    hook = getattr(type(value), "__sigform_render__", None)
    return hook(value) if hook is not None else str(value)


def _numbered_ok(annotation: object) -> bool:
    """Numbered items only when the annotation says the items are plain ``str``."""
    base, _ = strip_annotated(annotation)
    base, _ = split_optional(base)
    args = typing.get_args(base)
    if typing.get_origin(base) not in (list, tuple, set, frozenset, cabc.Sequence) or not args:
        return False
    return strip_annotated(args[0])[0] is str and (len(args) == 1 or args[1] is Ellipsis)


def _render(value: object, numbered: bool = True) -> str:
    if value is None:
        return "None"
    if isinstance(value, str):
        return plain_text(value)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, enum.Enum):
        return _render(value.value, numbered)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if (
        numbered
        and isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, str) and _simple_item(v) for v in value)
    ):
        return "\n".join(f"{i}. {v}" for i, v in enumerate(value, 1))
    return to_json(value)


def _simple_item(item: str) -> bool:
    """A string that survives as one numbered line: non-empty, one line, no outer spaces or quotes."""
    return (
        bool(item)
        and item == item.strip()
        and not (_LINE_BREAKS & set(item))
        and not (item[0] == '"' and item[-1] == '"')
    )


def to_json(value: object) -> str:
    """One line of JSON for ``value`` (models by alias, enums by value, dates in ISO 8601)."""
    from pydantic_core import to_jsonable_python

    # hooked values inside (a Tool, an Image) are written by their hook: plain objects through the
    # fallback, pydantic-based ones (media) by their serializer, which reads the prompt context
    data = to_jsonable_python(value, by_alias=True, fallback=_fallback, context=PROMPT_CONTEXT)
    return json.dumps(data, ensure_ascii=False)


def _disambiguate(value: str, text: str, annotation: object) -> str:
    """In a Union (or Any) a bare string may read as another member: then write it as JSON."""
    from sigform.errors import FieldValueError
    from sigform.types.coercion import coerce

    try:
        back = coerce(text, annotation)
    except FieldValueError:
        back = None
    if type(back) is str and back == value:
        return text
    return json.dumps(value, ensure_ascii=False)
