"""Coercion plans: an annotation compiled once into a tree of small converter nodes.

A node turns LM text or a parsed JSON value into the canonical Python value of its type
(``"1,048,576"`` -> ``1048576``, ``"Tier.SILVER"`` -> ``Tier.SILVER``, ``"- a\\n- b"`` ->
``["a", "b"]``) or raises :class:`Invalid`. Pydantic then validates the normalised value once
at the top (constraints, models, validators), so nothing pydantic does is rewritten here.

``convert(value, name, text)``: ``name`` is the innermost field name (number rules such as
``$`` on ``*_usd`` fields depend on it); ``text`` says a ``str`` value is free LM text (strip
it, unwrap a JSON string literal) rather than an exact JSON string.
"""

from __future__ import annotations

import threading
from typing import Any

from sigform.probes import probe
from sigform.types.inspection import cache_key

__all__ = ["Invalid", "Node", "accepts_none", "adapter_for", "plan_for"]


class Invalid(Exception):
    """A value could not be read. ``path`` grows as the error travels out of containers."""

    def __init__(self, message: str, path: list[str | int] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str | int] = path or []

    def at(self, location: str | int) -> Invalid:
        self.path.insert(0, location)
        return self

    def where(self) -> str:
        out = ""
        for p in self.path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
        return out


class Node:
    """Converter for one annotation; subclasses implement ``convert`` and ``fit``."""

    needs_validation = False  # True when pydantic must still validate the converted value

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation

    def convert(self, value: object, name: str, text: bool) -> object:
        raise NotImplementedError

    def fit(self, value: object, text: bool) -> float:
        """How natural ``value`` is for this type (unions pick the best-fitting member)."""
        return 0.0


_PLANS: dict[object, tuple[Node, object]] = {}
_ADAPTERS: dict[object, tuple[object, object]] = {}
_LOCK = threading.Lock()
_MAX_CACHE = 4096


def accepts_none(node: Node) -> bool:
    """Whether ``node`` reads JSON null as a value (None, Optional, Any)."""
    node = getattr(node, "inner", node)
    return bool(getattr(node, "allows_none", False)) or type(node).__name__ in ("NoneNode", "AnyNode")


def plan_for(annotation: object) -> Node:
    """The cached converter tree for ``annotation``."""
    key = cache_key(annotation)
    hit = _PLANS.get(key)
    if hit is not None:
        return hit[0]
    from sigform.types.coercion._compile import compile_node

    node = compile_node(annotation)
    with _LOCK:
        if len(_PLANS) >= _MAX_CACHE:
            _PLANS.clear()
        # the annotation keeps id()-keys valid; read under the lock (a clear may follow it)
        return _PLANS.setdefault(key, (node, annotation))[0]


def adapter_for(annotation: Any) -> Any:
    """A cached pydantic ``TypeAdapter`` for ``annotation``, or ``None`` if pydantic cannot build one."""
    key = cache_key(annotation)
    hit = _ADAPTERS.get(key)
    if hit is not None:
        return hit[0]
    from pydantic import TypeAdapter

    # None e.g. for typing.TypedDict on Python < 3.12: our own conversion is then final
    adapter: object = probe(f"pydantic validator of {annotation!r}", lambda: TypeAdapter(annotation), None)
    with _LOCK:
        if len(_ADAPTERS) >= _MAX_CACHE:
            _ADAPTERS.clear()
        return _ADAPTERS.setdefault(key, (adapter, annotation))[0]
