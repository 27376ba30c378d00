"""The types of JSON values, for annotations: what ``json.loads`` returns and ``json.dumps`` takes.

``JSON`` is any JSON value; ``JSONObject`` a decoded object (a schema, a request body, a tool's
arguments). Read-only parameters take ``Mapping[str, JSON]``, which also accepts a narrower dict
(``dict[str, str]``), as ``dict`` is invariant."""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ["JSON", "JSONObject"]

JSON: TypeAlias = Union[bool, int, float, str, list["JSON"], dict[str, "JSON"], None]
JSONObject: TypeAlias = dict[str, JSON]
