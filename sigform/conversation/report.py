"""What pruning dropped from one request.

A :class:`PruneReport` travels with the request into the LM's history entry: the caller that
pruned (:func:`sigform.conversation.send`) sets it for the duration of the call with
:func:`reporting`, and the LM reads :func:`active_report` when it records the call. Both live
in :mod:`sigform.lm.history` (the LM layer offers the slot; this layer, above it, fills it).
"""

from __future__ import annotations

from dataclasses import dataclass

from sigform.lm.history import active_report, reporting

__all__ = ["PruneReport", "active_report", "reporting"]


@dataclass(frozen=True)
class PruneReport:
    """What was dropped from a request to make it fit.

    ``dropped`` holds, per dropped unit (a turn, or a tool call with its results), the indices
    of its messages in the request as built, before pruning. ``reason`` says why:
    ``"keep_last"`` (the configured number of turns), ``"token budget"`` (the request would not
    fit) or ``"context window error"`` (the provider refused it; pruned further and retried).
    """

    reason: str
    dropped: tuple[tuple[int, ...], ...]
    kept_units: int
    tokens_before: int
    tokens_after: int
    budget: int | None = None
    dropped_tool_calls: tuple[str, ...] = ()
    exact: bool = False  # token counts from the model's tokenizer (else an estimate)

    @property
    def dropped_units(self) -> int:
        return len(self.dropped)

    @property
    def dropped_messages(self) -> int:
        return sum(len(u) for u in self.dropped)

    def summary(self) -> str:
        """One line for errors and logs."""
        calls = (
            f", {len(self.dropped_tool_calls)} tool call(s) with their results"
            if self.dropped_tool_calls
            else ""
        )
        budget = f" (budget {self.budget})" if self.budget is not None else ""
        approx = "" if self.exact else "~"
        return (
            f"dropped the {self.dropped_units} oldest turn(s) ({self.dropped_messages} message(s){calls}), "
            f"kept {self.kept_units}; prompt {approx}{self.tokens_before} -> {approx}{self.tokens_after} "
            f"tokens{budget}; reason: {self.reason}"
        )

    def __str__(self) -> str:
        return self.summary()
