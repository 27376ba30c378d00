"""Text that is not valid Unicode: a lone surrogate (``\\ud800``-``\\udfff``) cannot be encoded
as UTF-8, so it can be neither sent to a provider (inputs) nor trusted as an answer (outputs: a
JSON ``"\\ud83d"`` escape decodes to one when a model cuts an emoji's pair)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lone_surrogate"]

_MAX_WALK_DEPTH = 32


def lone_surrogate(value: Any, depth: int = 0) -> str | None:
    """Where a lone surrogate (``\\ud800``-``\\udfff``, not encodable as UTF-8) sits in ``value``:
    its strings, and those of lists, dicts and pydantic models inside it; ``None`` if nowhere."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{value[exc.start]!r} at position {exc.start}"
        return None
    if depth >= _MAX_WALK_DEPTH:
        return None
    if isinstance(value, Mapping):
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif hasattr(value, "__pydantic_fields__"):
        items = list(getattr(value, "__dict__", {}).values())
    else:
        return None
    for item in items:
        found = lone_surrogate(item, depth + 1)
        if found is not None:
            return found
    return None
