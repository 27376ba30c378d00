"""The types of JSON values, for annotations: what ``json.loads`` returns and ``json.dumps`` takes.

``JSON`` is any JSON value; ``JSONObject`` a decoded object (a schema, a request body, a tool's
arguments). Read-only parameters take ``Mapping[str, JSON]``, which also accepts a narrower dict
(``dict[str, str]``), as ``dict`` is invariant."""

from __future__ import annotations

import json
from typing import Any, TypeAlias, Union

__all__ = ["JSON", "JSONObject", "loads"]

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
