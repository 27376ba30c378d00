"""Lifecycle callbacks: logging, tracing and guards around every LM call and program step.

Subclass :class:`Callback`, override the ``on_*`` methods you care about, and register it
globally (``sigform.hooks.register(cb)``), per scope (``sigform.context(callbacks=[cb])`` or
``sigform.configure(callbacks=[cb])``) or per LM (``sigform.LM(..., callbacks=[cb])``).

Every method receives one typed event (:mod:`sigform.hook_events`: :class:`RequestEvent`,
:class:`ResponseEvent`, ...) whose fields are attributes (``event.model``, ``event.messages`` ...);
``event.payload`` (a dict of the fields) and ``event.get(name)`` still work. Events emitted by sigform:

=================  ===========================================================================
``request``        before an LM request (also before a cache lookup). ``event.headers`` is a
                   dict the callback may add HTTP headers to; ``event.veto(reason)`` stops the
                   call with :class:`RequestVetoed`.
``response``       after a successful LM call (``completions``, ``usage``, ``cache_hit``,
                   ``latency``).
``error``          an LM call failed for good (``error``, after retries).
``format``         an adapter built the messages for a signature.
``parse``          an adapter parsed a completion (``values`` or ``error``).
``tool``           a tool was called (emitted by ``sigform.tools``).
``module_start``   a program (module) starts; ``module_end`` when it returns or raises.
=================  ===========================================================================

A callback that raises is logged and skipped, so a broken logger never breaks a program; the
one exception is :class:`RequestVetoed`, which is how ``on_request`` stops a call. Dispatch
costs one contextvar lookup when nothing is registered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence

from sigform.errors import RequestVetoed
from sigform.hook_events import (
    ErrorEvent,
    Event,
    FormatEvent,
    ModuleEndEvent,
    ModuleStartEvent,
    ParseEvent,
    RequestEvent,
    ResponseEvent,
    ToolEvent,
    make_event,
)
from sigform.settings import get_setting

__all__ = [
    "EVENTS",
    "Callback",
    "ErrorEvent",
    "Event",
    "FormatEvent",
    "ModuleEndEvent",
    "ModuleStartEvent",
    "ParseEvent",
    "RequestEvent",
    "RequestVetoed",
    "ResponseEvent",
    "ToolEvent",
    "active_callbacks",
    "emit",
    "register",
    "registered",
    "unregister",
]

logger = logging.getLogger("sigform.hooks")

EVENTS: tuple[str, ...] = (
    "request",
    "response",
    "error",
    "format",
    "parse",
    "tool",
    "module_start",
    "module_end",
)


class Callback:
    """Base class for lifecycle callbacks; every method is a no-op, override what you need."""

    def on_request(self, event: RequestEvent) -> None:
        """Before an LM request. May add ``event.headers`` or call ``event.veto(reason)``."""

    def on_response(self, event: ResponseEvent) -> None:
        """After a successful LM call (cache hits included, ``event.cache_hit`` says which)."""

    def on_error(self, event: ErrorEvent) -> None:
        """After an LM call failed for good (``event.error``)."""

    def on_format(self, event: FormatEvent) -> None:
        """An adapter formatted messages."""

    def on_parse(self, event: ParseEvent) -> None:
        """An adapter parsed a completion."""

    def on_tool(self, event: ToolEvent) -> None:
        """A tool was called."""

    def on_module_start(self, event: ModuleStartEvent) -> None:
        """A program started."""

    def on_module_end(self, event: ModuleEndEvent) -> None:
        """A program finished (``event.error`` is set when it raised)."""


_registry: list[Callback] = []
_registry_lock = threading.Lock()


def register(callback: Callback) -> Callback:
    """Register ``callback`` for every event in this process; returns it (usable as decorator)."""
    if not isinstance(callback, Callback):
        raise TypeError(f"expected a sigform.hooks.Callback instance, got {type(callback).__name__}")
    with _registry_lock:
        if callback not in _registry:
            _registry.append(callback)
    return callback


def unregister(callback: Callback) -> None:
    """Remove a globally registered callback (no error if it was not registered)."""
    with _registry_lock:
        if callback in _registry:
            _registry.remove(callback)


def registered() -> tuple[Callback, ...]:
    """The globally registered callbacks, in registration order."""
    return tuple(_registry)


def active_callbacks(extra: Iterable[Callback] | None = None) -> list[Callback]:
    """Callbacks that see an event now: global, then settings ``callbacks``, then ``extra``."""
    scoped = get_setting("callbacks")
    if not _registry and not scoped and not extra:
        return []
    out: list[Callback] = list(_registry)
    for cb in (*(scoped or ()), *(extra or ())):
        if cb not in out:
            out.append(cb)
    return out


def emit(event_name: str, *, callbacks: Sequence[Callback] | None = None, **payload: object) -> Event | None:
    """Send ``event_name`` to every active callback; returns the :class:`Event` (None if none listen).

    ``callbacks`` adds per-object callbacks (an LM's or a program's) to the global and scoped
    ones. For ``request`` events a veto raises :class:`RequestVetoed` at once (later callbacks do not
    run).
    """
    active = active_callbacks(callbacks)
    if not active:
        return None
    if event_name not in EVENTS:
        raise ValueError(f"unknown event {event_name!r}; expected one of {', '.join(EVENTS)}")
    event = make_event(event_name, payload)
    method_name = f"on_{event_name}"
    for cb in active:
        try:
            getattr(cb, method_name)(event)
        except RequestVetoed:
            raise
        except Exception:
            logger.warning("callback %s.%s raised; ignored", type(cb).__name__, method_name, exc_info=True)
        if event._vetoed is not None:
            raise RequestVetoed(event._vetoed, callback=type(cb).__name__)
    return event
