"""Text that is not valid Unicode: a lone surrogate (``\\ud800``-``\\udfff``) cannot be encoded
as UTF-8, so it can be neither sent to a provider (inputs) nor trusted as an answer (outputs: a
JSON ``"\\ud83d"`` escape decodes to one when a model cuts an emoji's pair)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lone_surrogate"]

def lone_surrogate(value: object) -> str | None:
    """Where a lone surrogate (``\\ud800``-``\\udfff``, not encodable as UTF-8) sits in ``value``:
    its strings, and those of lists, dicts and pydantic models inside it, at any depth (a
    container seen twice, as in a cycle, is walked once); ``None`` if nowhere."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.isascii():
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"{item[exc.start]!r} at position {exc.start}"
            continue
        if isinstance(item, Mapping):
            children: Any = [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        elif hasattr(item, "__pydantic_fields__"):
            children = list(getattr(item, "__dict__", {}).values())
        else:
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend(reversed(list(children)))
    return None
