"""The typed-value engine: how a value of a Python type is written into a prompt and read back.

* :func:`render_value` writes a value for a prompt; :func:`coerce` reads it back (or reads LM
  text / parsed JSON) as a validated value, raising :class:`~sigform.errors.FieldValueError`
  with a readable reason when there is no single sensible reading.
* :func:`describe_type` / :func:`type_hint` say what a value should look like;
  :func:`json_schema` / :func:`strict_json_schema` give compact and strict-mode JSON schemas.
* :func:`type_name` / :func:`resolve_type_name` convert annotations to and from readable
  strings (safely, without eval).
* :func:`parse_json_text` reads one JSON value out of LM text (repairs, never completes a cut);
  :mod:`sigform.types.inspection` answers questions about annotations (``split_optional``, ...).

Custom types can take part by defining ``__sigform_coerce__(cls, value)`` (classmethod:
return the value or raise ValueError/TypeError), ``__sigform_render__(self) -> str`` and
``__sigform_describe__(cls) -> TypeDescription``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform._lazy import lazy_exports
from sigform.types.coercion import coerce, coerce_fields
from sigform.types.describe import TypeDescription, describe_type, type_hint
from sigform.types.json_text import JSONTextError, parse_json_text
from sigform.types.names import resolve_type_name, type_name
from sigform.types.render import render_value
from sigform.types.schema import json_schema, strict_json_schema

# The special types are pydantic models (building them costs more than the rest of this package);
# they load on first access (PEP 562), so a program that never names them never builds them.
_LAZY: dict[str, str] = {
    "Audio": "sigform.types.audio",
    "File": "sigform.types.file",
    "History": "sigform.types.history",
    "Image": "sigform.types.image",
    "Media": "sigform.types.media",
    "iter_media": "sigform.types.media",
    "Reasoning": "sigform.types.reasoning",
    "ToolCalls": "sigform.types.tool_calls",
}


__getattr__, __dir__ = lazy_exports('sigform.types', _LAZY, globals())


if TYPE_CHECKING:
    from sigform.types.audio import Audio
    from sigform.types.file import File
    from sigform.types.history import History
    from sigform.types.image import Image
    from sigform.types.media import Media, iter_media
    from sigform.types.reasoning import Reasoning
    from sigform.types.tool_calls import ToolCalls

__all__ = [
    "Audio",
    "File",
    "History",
    "Image",
    "JSONTextError",
    "Media",
    "Reasoning",
    "ToolCalls",
    "TypeDescription",
    "coerce",
    "coerce_fields",
    "describe_type",
    "iter_media",
    "json_schema",
    "parse_json_text",
    "render_value",
    "resolve_type_name",
    "strict_json_schema",
    "type_hint",
    "type_name",
]
