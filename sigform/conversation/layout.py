"""Which messages of one request are the stable prefix and which may be pruned.

Whoever builds a request knows its structure (the adapters: system, demos, History turns, the
current input; the agent: system, task, one unit per step) and describes it with a
:class:`Layout` kept *beside* the messages -- never as extra keys inside them, which would leak
to providers. Pruning drops whole units, oldest first; the prefix and everything after the
last unit (the current request) are never pruned, and the prefix is what prompt caching marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sigform.message import Message

__all__ = ["Layout", "tool_units"]



@dataclass(frozen=True)
class Layout:
    """The structure of a request's message list.

    ``prefix`` leading messages (system message, demos) are never pruned and form the stable
    prefix that prompt caching marks. ``units`` are groups of message indices, oldest first,
    each dropped or kept as a whole (a tool call always with its results); all units lie after
    the prefix and form one contiguous region. Messages after the last unit are never pruned.
    """

    prefix: int = 1
    units: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.prefix < 0:
            raise ValueError(f"Layout prefix must be >= 0, got {self.prefix}")
        expected = self.prefix
        for unit in self.units:
            if not unit:
                raise ValueError("Layout units must not be empty")
            for index in unit:
                if index != expected:
                    raise ValueError(
                        f"Layout units must cover consecutive messages right after the prefix; "
                        f"expected message {expected}, got {index}"
                    )
                expected += 1

    @property
    def region(self) -> tuple[int, int]:
        """``(start, end)`` of the prunable messages (``start == end`` when there are none)."""
        end = self.units[-1][-1] + 1 if self.units else self.prefix
        return self.prefix, end

    def check(self, messages: Sequence[Message]) -> None:
        """Raise ValueError if this layout does not fit ``messages``."""
        if self.region[1] > len(messages):
            raise ValueError(f"Layout covers {self.region[1]} messages but the request has {len(messages)}")

    @classmethod
    def from_region(cls, messages: Sequence[Message], prefix: int, end: int) -> Layout:
        """A layout whose prunable region is ``messages[prefix:end]``, grouped by :func:`tool_units`."""
        return cls(prefix, tool_units(messages, prefix, end))


def tool_units(messages: Sequence[Message], start: int, end: int) -> tuple[tuple[int, ...], ...]:
    """Group ``messages[start:end]`` into prunable units: every message is its own unit, except
    that tool results (role ``tool``) join the unit of the assistant turn that called them."""
    units: list[list[int]] = []
    for i in range(start, end):
        if messages[i].get("role") == "tool" and units:
            units[-1].append(i)
        else:
            units.append([i])
    return tuple(tuple(u) for u in units)
