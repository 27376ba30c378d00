"""The events callbacks receive: one typed dataclass per event name.

A callback reads fields as attributes (``event.model``, ``event.usage``); type checkers and
editors know which fields each event has. For code written against the earlier dict-backed
events, ``event.payload`` (a fresh dict of the fields) and ``event.get(name, default)`` still work.
``event.headers`` exists on every event (only ``request`` events carry headers a callback may
add to); :meth:`Event.veto` stops a ``request``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from sigform.errors import SigformError

if TYPE_CHECKING:
    from sigform.lm.interface import Completion, LMProtocol, Usage
    from sigform.message import Message

__all__ = [
    "ErrorEvent",
    "Event",
    "FormatEvent",
    "LMEvent",
    "ModuleEndEvent",
    "ModuleStartEvent",
    "ParseEvent",
    "RequestEvent",
    "ResponseEvent",
    "ToolEvent",
    "make_event",
]


@dataclass(eq=False, repr=False, kw_only=True)
class Event:
    """One lifecycle event; subclasses declare its fields."""

    name: ClassVar[str] = "event"
    headers: dict[str, str] = field(default_factory=dict)
    _vetoed: str | None = field(default=None, init=False)

    @property
    def payload(self) -> dict[str, Any]:
        """The event's fields as a dict (``headers`` apart), as earlier versions passed them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_PAYLOAD}

    def get(self, key: str, default: object = None) -> Any:
        """A field by name, or ``default`` when this event has no such field."""
        return self.payload.get(key, default)

    def veto(self, reason: str) -> None:
        """Stop the request this event announces (``request`` events only)."""
        if self.name != "request":
            raise SigformError(f"only request events can be vetoed, not {self.name!r}")
        self._vetoed = reason

    @property
    def vetoed(self) -> str | None:
        """The veto reason, or None."""
        return self._vetoed

    def __getattr__(self, key: str) -> Any:  # only reached for names the event does not have
        raise AttributeError(f"{self.name} event has no field {key!r}")

    def __repr__(self) -> str:
        return f"Event({self.name!r}, fields={sorted(self.payload)})"


@dataclass(eq=False, repr=False, kw_only=True)
class LMEvent(Event):
    """What every LM call event says: the LM, its model and provider, the request."""

    lm: LMProtocol
    model: str
    provider: str | None
    messages: list[Message]
    params: dict[str, object]


@dataclass(eq=False, repr=False, kw_only=True)
class RequestEvent(LMEvent):
    """Before an LM request (also before a cache lookup); may add ``headers`` or :meth:`veto`."""

    name: ClassVar[str] = "request"
    n: int
    backend: str


@dataclass(eq=False, repr=False, kw_only=True)
class ResponseEvent(LMEvent):
    """After a successful LM call (cache hits included)."""

    name: ClassVar[str] = "response"
    completions: list[Completion]
    usage: Usage
    cache_hit: bool
    latency: float


@dataclass(eq=False, repr=False, kw_only=True)
class ErrorEvent(LMEvent):
    """An LM call failed for good (after retries)."""

    name: ClassVar[str] = "error"
    error: BaseException
    latency: float


@dataclass(eq=False, repr=False, kw_only=True)
class FormatEvent(Event):
    """An adapter built the messages for a signature."""

    name: ClassVar[str] = "format"
    adapter: str
    signature: object  # the signature class (or the view native tool calling builds)
    messages: list[Message]


@dataclass(eq=False, repr=False, kw_only=True)
class ParseEvent(Event):
    """An adapter parsed a completion: ``values``, or the ``error`` it raised."""

    name: ClassVar[str] = "parse"
    adapter: str
    signature: object
    completion: str
    values: dict[str, object] | None = None
    error: BaseException | None = None


@dataclass(eq=False, repr=False, kw_only=True)
class ToolEvent(Event):
    """A tool call's progress (``status``: started, finished, ...)."""

    name: ClassVar[str] = "tool"
    status: str
    tool: str
    call_id: str | None
    step: int
    arguments: object  # as the model sent them: JSON text or an object
    args: dict[str, object] | None = None
    description: str | None = None
    result: object = None  # a sigform.tools.ToolResult once the call finished


@dataclass(eq=False, repr=False, kw_only=True)
class ModuleStartEvent(Event):
    """A program (module) starts."""

    name: ClassVar[str] = "module_start"
    module: object
    call_id: int
    args: tuple[object, ...]
    inputs: dict[str, object]


@dataclass(eq=False, repr=False, kw_only=True)
class ModuleEndEvent(Event):
    """A program returned (``outputs``) or raised (``error``)."""

    name: ClassVar[str] = "module_end"
    module: object
    call_id: int
    outputs: object
    error: BaseException | None


_NOT_PAYLOAD = frozenset({"headers", "_vetoed"})
_CLASSES: dict[str, type[Event]] = {
    cls.name: cls
    for cls in (
        RequestEvent,
        ResponseEvent,
        ErrorEvent,
        FormatEvent,
        ParseEvent,
        ToolEvent,
        ModuleStartEvent,
        ModuleEndEvent,
    )
}


def make_event(name: str, payload: dict[str, Any]) -> Event:
    """The event ``name`` (``"request"`` -> :class:`RequestEvent`) holding ``payload``.

    sigform sends every field; a field a caller of :func:`sigform.hooks.emit` leaves out is None.
    A field the event does not have is a :class:`TypeError` (a misspelt field would be lost)."""
    cls = _CLASSES[name]
    absent = _ABSENT[name]
    if not payload.keys() <= absent.keys() | {"headers"}:
        unknown = sorted(set(payload) - set(absent) - {"headers"})
        raise TypeError(f"the {name} event has no field(s) {unknown}; its fields: {sorted(absent)}")
    return cls(**{**absent, **payload, "headers": payload.get("headers") or {}})


# per event: its fields (headers apart), each None until the payload gives it
_ABSENT: dict[str, dict[str, object]] = {
    name: {f.name: None for f in dataclasses.fields(cls) if f.init and f.name != "headers"}
    for name, cls in _CLASSES.items()
}
