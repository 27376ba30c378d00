"""A bounded set of SDK clients, one per slot, each lent out while a request uses it.

A slot is an endpoint plus where its credentials come from (an env var, a command, a callable,
a literal), not their current values: when a rotating key yields a new value, the slot's client
is replaced by one made for it, and the old one is closed as soon as no request is using it
(never under a request in flight). At most ``max_slots`` slots are kept; the least recently used
one is retired the same way. Closing is the caller's job (sync or async): the pool only says
which clients are done.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["ClientPool", "Lease"]


class Lease:
    """One slot's client, the resolved identity it was made for and how many requests use it."""

    __slots__ = ("client", "ident", "retired", "users")

    def __init__(self, client: Any, ident: Hashable) -> None:
        self.client = client
        self.ident = ident
        self.users = 0
        self.retired = False


class ClientPool:
    """Clients by slot; :meth:`acquire` / :meth:`release` around every request."""

    def __init__(self, max_slots: int) -> None:
        self._slots: OrderedDict[Hashable, Lease] = OrderedDict()
        self._retired: set[Lease] = set()  # replaced, still in use: closed by their last release
        self._max = max_slots
        # re-entrant: a client made under it may trigger the garbage collector, which can finalise
        # an abandoned stream whose cleanup releases its lease on this same thread
        self._lock = threading.RLock()
        self.keepalive: Any = None  # an object living as long as the pool (a loop's closer)

    def acquire(self, slot: Hashable, ident: Hashable, make: Callable[[], Any]) -> tuple[Lease, list[Any]]:
        """The slot's client for ``ident`` (made if the slot has none or one for another
        identity), lent to the caller; and the clients now done with, for the caller to close."""
        with self._lock:
            lease = self._slots.get(slot)
            if lease is not None and lease.ident == ident:
                lease.users += 1
                self._slots.move_to_end(slot)
                return lease, []
            # made under the lock: concurrent first calls share one client
            fresh = Lease(make(), ident)
            fresh.users = 1
            done = self._retire(lease) if lease is not None else []
            self._slots[slot] = fresh
            self._slots.move_to_end(slot)
            while len(self._slots) > self._max:
                done += self._retire(self._slots.popitem(last=False)[1])
            return fresh, done

    def holds(self, slot: Hashable) -> bool:
        """Whether the slot has a client (made for its latest identity)."""
        with self._lock:
            return slot in self._slots

    def release(self, lease: Lease) -> Any | None:
        """Hand ``lease`` back; its client if it was retired and this was its last user."""
        with self._lock:
            lease.users -= 1
            if lease.retired and lease.users == 0:
                self._retired.discard(lease)
                return lease.client
            return None

    def drain(self) -> list[Any]:
        """Every client, the pool emptied (at interpreter exit or loop shutdown: nothing in flight)."""
        with self._lock:
            out = [lease.client for lease in (*self._slots.values(), *self._retired)]
            for lease in (*self._slots.values(), *self._retired):
                lease.retired = True
            self._slots.clear()
            self._retired.clear()
            return out

    def _retire(self, lease: Lease) -> list[Any]:
        lease.retired = True
        if lease.users == 0:
            return [lease.client]
        self._retired.add(lease)
        return []
