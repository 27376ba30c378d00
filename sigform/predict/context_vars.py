"""Per-run state that travels with the call stack (contextvars), invisible in program code.

* usage trackers: a batch worker (or any caller) collects the tokens of every LM request made
  inside a scope, across nested modules and threads that copied the context;
* rollout keyword arguments: ``BestOfN`` / ``Refine`` set ``rollout_id`` (and a temperature) for
  every Predict inside the attempt, so the LM cache does not return the same answer N times;
  nested runs compose the ids into a path (``(outer, inner)``);
* an instruction hint: ``Refine`` tells the next attempt what went wrong with the last one.

Each lookup is a single ``ContextVar.get``; nothing is paid when the features are unused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from sigform.lm.interface import NO_USAGE, Usage

__all__ = ["UsageTracker", "add_usage", "hint", "rollout", "rollout_kwargs", "track_usage"]


class UsageTracker:
    """Accumulates :class:`Usage` of LM requests made in a scope (thread-safe): ``requests`` LM
    requests (re-asks and fallbacks included, failed program calls too), ``cache_hits`` of them
    answered from the cache (counted per program call whose requests all hit)."""

    __slots__ = ("_lock", "cache_hits", "requests", "usage")

    def __init__(self) -> None:
        self.usage = NO_USAGE
        self.requests = 0
        self.cache_hits = 0
        self._lock = threading.Lock()

    def add(self, usage: Usage, requests: int = 1) -> None:
        with self._lock:
            self.usage = self.usage + usage
            self.requests += requests
            if usage.cache_hit:
                self.cache_hits += requests

    def __repr__(self) -> str:
        return (
            f"UsageTracker(requests={self.requests}, cache_hits={self.cache_hits}, "
            f"total_tokens={self.usage.total_tokens})"
        )


_trackers: ContextVar[tuple[UsageTracker, ...]] = ContextVar("sigform_usage_trackers", default=())
_rollout: ContextVar[Mapping[str, object] | None] = ContextVar("sigform_rollout", default=None)
_hint: ContextVar[str | None] = ContextVar("sigform_instruction_hint", default=None)


class _UsageScope:
    """The ``with`` block of :func:`track_usage`. (A class, not a generator context manager:
    a batch enters one per example, and the generator, its wrapper and their frames are four
    more objects per call for the garbage collector to trace while the call is in flight.)"""

    __slots__ = ("_token", "tracker")

    def __init__(self) -> None:
        self.tracker = UsageTracker()
        self._token: Token[tuple[UsageTracker, ...]] | None = None

    def __enter__(self) -> UsageTracker:
        if self._token is not None:  # entered twice, it counted every request twice
            raise RuntimeError(
                "this track_usage() block is already open; call sf.track_usage() for each "
                "`with` (one per task or thread)"
            )
        self._token = _trackers.set((*_trackers.get(), self.tracker))
        return self.tracker

    def __exit__(self, *exc_info: object) -> None:
        if self._token is None:
            raise RuntimeError("track_usage() block exited without being entered")
        _trackers.reset(self._token)
        self._token = None


def track_usage() -> _UsageScope:
    """Collect the usage of every LM request made by programs inside the ``with`` block."""
    return _UsageScope()


def add_usage(usage: Usage, requests: int = 1) -> None:
    """Record one program call's usage (``requests`` LM requests) with every active tracker
    (called by Predict, for failed calls too)."""
    for tracker in _trackers.get():
        tracker.add(usage, requests)


@contextmanager
def rollout(**lm_kwargs: object) -> Iterator[None]:
    """Give every Predict inside the block these LM keyword arguments (under explicit ones).

    Nested rollouts compose: the inner block's arguments are merged over the outer ones, and a
    ``rollout_id`` is appended to the outer one as a path - attempt 1 of an inner run inside
    attempt 0 of an outer run is ``(0, 1)`` - so every (outer, inner) attempt has its own LM cache
    entries. A top-level id stays as given."""
    outer = _rollout.get()
    if outer:
        merged = {**outer, **lm_kwargs}
        if "rollout_id" in lm_kwargs and "rollout_id" in outer:
            merged["rollout_id"] = (*_path(outer["rollout_id"]), *_path(lm_kwargs["rollout_id"]))
        lm_kwargs = merged
    token = _rollout.set(lm_kwargs)
    try:
        yield
    finally:
        _rollout.reset(token)


def _path(rollout_id: object) -> tuple[object, ...]:
    return rollout_id if isinstance(rollout_id, tuple) else (rollout_id,)


def rollout_kwargs() -> Mapping[str, Any] | None:
    return _rollout.get()


@contextmanager
def hint(text: str | None) -> Iterator[None]:
    """Append ``text`` to the instructions of every Predict inside the block."""
    token = _hint.set(text)
    try:
        yield
    finally:
        _hint.reset(token)


def current_hint() -> str | None:
    return _hint.get()
