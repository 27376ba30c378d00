"""The types of JSON values, for annotations: what ``json.loads`` returns and ``json.dumps`` takes.

``JSON`` is any JSON value; ``JSONObject`` a decoded object (a schema, a request body, a tool's
arguments). Read-only parameters take ``Mapping[str, JSON]``, which also accepts a narrower dict
(``dict[str, str]``), as ``dict`` is invariant.

A value read out of a document is a ``JSON`` union; :func:`json_object` and :func:`json_array`
read one where the document's shape says an object or an array goes (a part left out reads as
empty, a part of another type is a :class:`TypeError` naming it), so that code walking a
document says what it expects once, where it reads, instead of casting.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias, Union

__all__ = ["JSON", "JSONObject", "json_array", "json_object", "loads"]

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]
JSONObject: TypeAlias = dict[str, JSON]


def loads(data: str | bytes) -> Any:
    """``json.loads``, where JSON nested deeper than the parser's recursion limit is malformed JSON
    like any other (a ``json.JSONDecodeError``, a ``ValueError``), never a ``RecursionError``: a
    server's answer or a data file may be ``[`` x 100,000, and every reader catches the former."""
    try:
        return json.loads(data)
    except RecursionError:
        doc = data if isinstance(data, str) else data[:1000].decode("utf-8", "replace")
        raise json.JSONDecodeError("nested too deeply", doc, 0) from None


def json_object(value: object, what: str = "value") -> JSONObject:
    """``value`` as a JSON object: ``{}`` for None (a part left out), else it must be a dict."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def json_array(value: object, what: str = "value") -> list[JSON]:
    """``value`` as a JSON array: ``[]`` for None (a part left out), else it must be a list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{what}: expected a JSON array, got {type(value).__name__}")
    return value
