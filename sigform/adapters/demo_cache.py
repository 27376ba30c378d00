"""Demo messages rendered once per signature and demo *values*, then reused.

A program sends the same demos with every call; rendering them through the templates is most of
the cost of formatting a request with demos. The cache is keyed on what rendering reads -- the
signature (by the caller, per adapter and template set) and a fingerprint of every demo's
values -- never on the rendered text, so a demo changed in place (a list appended to, a model
field set) has a new fingerprint and is rendered again.

The fingerprint is exact about what could render differently: values are tagged with their
type (``1``, ``1.0`` and ``True`` compare equal but render differently), floats and date-times by
their ``repr`` (``0.0 == -0.0``, equal instants in other time zones), pydantic models by class
and field values. A value of any other kind (media, dataclasses, arbitrary objects whose
rendering the cache cannot vouch for) makes the demos uncacheable: they are rendered every time,
as before.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from sigform.errors import SigformError
from sigform.message import Message

__all__ = ["DemoCache", "demos_fingerprint"]


_TAGGED = frozenset({int, bool, bytes, type(None)})
_BY_REPR = frozenset(
    {
        float,
        complex,
        decimal.Decimal,
        datetime.datetime,
        datetime.date,
        datetime.time,
        datetime.timedelta,
        uuid.UUID,
    }
)
_MAX_DEPTH = 32
_PER_SIGNATURE = 64  # demo sets kept per signature (programs under optimisation try many)


class _Uncacheable(SigformError):
    """A value the fingerprint cannot vouch for (never escapes :func:`demos_fingerprint`)."""


def _fp(value: Any, depth: int) -> object:
    kind = type(value)
    if kind is str:
        return value
    if kind in _TAGGED:
        return (kind, value)
    if kind in _BY_REPR:
        return (kind, repr(value))
    if depth > _MAX_DEPTH:
        raise _Uncacheable
    depth += 1
    if kind is list or kind is tuple:
        return (kind, tuple([v if type(v) is str else _fp(v, depth) for v in value]))
    if kind is dict:
        items = [(_fp(k, depth), v if type(v) is str else _fp(v, depth)) for k, v in value.items()]
        return (kind, tuple(items))
    if isinstance(value, enum.Enum):
        return (kind, value.name, _fp(value.value, depth))
    if isinstance(value, BaseModel):
        if kind.__pydantic_computed_fields__:  # computed from anything: not vouched for
            raise _Uncacheable
        extra = value.__pydantic_extra__
        fields = tuple([(k, v if type(v) is str else _fp(v, depth)) for k, v in value.__dict__.items()])
        return (kind, fields, _fp(extra, depth) if extra else None)
    raise _Uncacheable


def demos_fingerprint(demos: Sequence[Mapping[str, object]]) -> tuple[Any, ...] | None:
    """A hashable value equal for two demo lists only if they render identically; ``None``
    when some value is of a kind the fingerprint cannot vouch for."""
    try:
        return tuple(
            [tuple([(k, v if type(v) is str else _fp(v, 0)) for k, v in demo.items()]) for demo in demos]
        )
    except _Uncacheable:
        return None


class DemoCache:
    """Rendered demo messages of one signature, by the demos' fingerprint (bounded)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[object, ...], tuple[Message, ...]] = {}

    def messages(
        self, demos: Sequence[Mapping[str, object]], render: Callable[[], list[Message]]
    ) -> list[Message]:
        """The demo messages (fresh dicts the caller may change), rendered by ``render`` on a miss."""
        key = demos_fingerprint(demos)
        cached = self._entries.get(key) if key is not None else None
        if cached is None:
            rendered = render()
            # only text messages are kept: media content parts are lists a caller could change
            if key is None or not all(type(m.get("content")) is str for m in rendered):
                return rendered
            if len(self._entries) >= _PER_SIGNATURE:
                self._entries.clear()
            cached = self._entries[key] = tuple(m.copy() for m in rendered)
        return [m.copy() for m in cached]
