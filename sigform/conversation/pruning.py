"""Pruning long conversations: drop the oldest turns until a request fits.

Pure functions over a message list and its :class:`~sigform.conversation.layout.Layout`: the
prefix (system, demos) and the tail (the current request) are never touched; whole units are
dropped oldest first, so a tool call never loses its results (or the reverse) and the kept
turns stay in order with their ids. A short marker message says that earlier turns were
omitted; it is there if and only if something was dropped. The result is deterministic: the
same messages, layout and settings always give the same request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sigform.conversation.layout import Layout
from sigform.conversation.report import PruneReport
from sigform.errors import ContextWindowError
from sigform.message import Message

__all__ = ["DEFAULT_MARKER", "Pruned", "Pruning", "prune"]


DEFAULT_MARKER = (
    "[{dropped} earlier turn(s) of this conversation were omitted to fit the model's context window.]"
)


@dataclass(frozen=True)
class Pruning:
    """How long conversations are cut to fit (``prune=Pruning(...)`` on a program, an LM call's
    options, or ``sigform.configure(prune=...)``).

    Args:
        keep_last: keep at most this many of the most recent turns (a turn: one History entry,
            one agent step, or a tool call with its results); None: no limit.
        max_prompt_tokens: the prompt's token budget; None: the model's context window minus
            the output reserve.
        context_window: the model's context window, overriding litellm's model map.
        reserve_output: tokens kept free for the answer (default: the request's ``max_tokens``,
            else the model's output limit capped at a quarter of the window).
        retry: on a context-window error from the provider, prune further and retry once.
        marker: the text of the note that replaces dropped turns (``{dropped}`` = turns,
            ``{messages}`` = messages).
        enabled: False turns pruning off (requests are sent whole).
    """

    keep_last: int | None = None
    max_prompt_tokens: int | None = None
    context_window: int | None = None
    reserve_output: int | None = None
    retry: bool = True
    marker: str = DEFAULT_MARKER
    enabled: bool = True

    def __post_init__(self) -> None:
        for name in ("keep_last", "max_prompt_tokens", "context_window", "reserve_output"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"Pruning.{name} must be a non-negative integer or None, got {value!r}")
        try:
            self.marker.format(dropped=1, messages=1)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"Pruning.marker may only use {{dropped}} and {{messages}}: {self.marker!r} ({exc})"
            ) from None


@dataclass(slots=True)
class Pruned:
    """The request after pruning, and what was dropped (None when nothing was)."""

    messages: list[Message]
    report: PruneReport | None
    prefix: int  # the stable prefix is unchanged by pruning; kept here for the cache marker


def _call_ids(messages: Sequence[Message], unit: Sequence[int]) -> list[str]:
    return [str(c.get("id")) for i in unit for c in messages[i].get("tool_calls") or ()]


def marker_message(template: str, dropped_units: int, dropped_messages: int) -> Message:
    """The note standing in for dropped turns (a user turn: every provider accepts it there)."""
    return {"role": "user", "content": template.format(dropped=dropped_units, messages=dropped_messages)}


def prune(
    messages: Sequence[Message],
    layout: Layout,
    counts: Sequence[int],
    *,
    budget: int | None = None,
    keep_last: int | None = None,
    marker: str = DEFAULT_MARKER,
    marker_tokens: int = 32,
    reason: str | None = None,
    exact: bool = False,
) -> Pruned:
    """Drop the oldest units of ``messages`` until at most ``keep_last`` remain and the request
    costs at most ``budget`` tokens (``counts`` holds each message's tokens).

    Raises :class:`ContextWindowError` when even dropping every unit cannot meet ``budget``
    (the prefix and the current request alone are too big); the message says what was dropped.
    """
    layout.check(messages)
    if len(counts) != len(messages):
        raise ValueError(f"counts has {len(counts)} entries for {len(messages)} messages")
    units = layout.units
    total = sum(counts)
    unit_cost = [sum(counts[i] for i in unit) for unit in units]
    start = layout.prefix
    fixed = total - sum(unit_cost)
    keep = len(units) if keep_last is None else min(len(units), keep_last)
    why = "keep_last" if keep < len(units) else None
    # a drop adds the marker message, so its tokens count against the budget too
    marker_cost = marker_tokens if keep < len(units) else 0
    if budget is not None and fixed + sum(unit_cost[len(units) - keep :]) + marker_cost > budget:
        why = "token budget"
        room = budget - fixed - marker_tokens
        kept_cost = 0
        fitting = 0
        for cost in reversed(unit_cost[len(units) - keep :]):
            if kept_cost + cost > room:
                break  # stop at the first turn that does not fit: the kept turns stay contiguous
            kept_cost += cost
            fitting += 1
        keep = fitting
        if room < 0:
            raise ContextWindowError(
                f"the request does not fit the token budget of {budget}: the system message, demos and "
                f"current input alone take {fixed} tokens"
                + (f" (all {len(units)} earlier turn(s) would have to be dropped)" if units else "")
            )
    if keep == len(units):
        return Pruned(list(messages), None, layout.prefix)
    dropped = units[: len(units) - keep]
    n_messages = sum(len(u) for u in dropped)
    note = marker_message(marker, len(dropped), n_messages)
    first_kept = dropped[-1][-1] + 1
    out = [*messages[:start], note, *messages[first_kept:]]
    after = total - sum(unit_cost[: len(dropped)]) + marker_tokens
    report = PruneReport(
        reason=reason or why or "token budget",
        dropped=tuple(dropped),
        kept_units=keep,
        tokens_before=total,
        tokens_after=after,
        budget=budget,
        dropped_tool_calls=tuple(cid for unit in dropped for cid in _call_ids(messages, unit)),
        exact=exact,
    )
    return Pruned(out, report, layout.prefix)
