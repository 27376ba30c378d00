"""What one adapter run returns, and how failed candidates are reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sigform.errors import FieldError, FieldValueError, ParseError, StructureError
from sigform.lm.interface import Completion, Usage
from sigform.message import Message

__all__ = ["AdapterResult", "Slot", "final_error"]


@dataclass
class AdapterResult:
    """Outcome of :meth:`Adapter.run`: one output dict per candidate, plus what it took.

    ``completions`` are the raw completions the outputs were parsed from (one per candidate);
    ``all_completions`` every completion received, retries included; ``adapter_names`` the
    adapters tried (a fallback adds its name); ``attempts`` the LM requests made; ``messages``
    the messages of the first request.
    """

    outputs: list[dict[str, Any]]
    completions: list[Completion]
    usage: Usage
    adapter_names: list[str]
    attempts: int
    messages: list[Message]
    all_completions: list[Completion] = field(default_factory=list)
    request_kwargs: dict[str, Any] = field(default_factory=dict)
    unstated: list[tuple[str, ...]] = field(default_factory=list)  # per candidate, grounding.py


@dataclass
class Slot:
    """One candidate as it goes through parse, reask and fallback."""

    completion: Completion
    outputs: dict[str, Any] | None = None
    error: ParseError | None = None
    terminal: bool = False  # refusal/length/empty: no reask, no fallback
    reasks: int = 0
    adapters: list[str] = field(default_factory=list)
    history: list[Completion] = field(default_factory=list)
    unstated: tuple[str, ...] = ()  # outputs set to None: the inputs do not state them

    @property
    def ok(self) -> bool:
        return self.outputs is not None

    @property
    def structural(self) -> bool:
        return isinstance(self.error, StructureError) and not self.terminal


def final_error(slots: list[Slot], adapter_names: list[str]) -> ParseError:
    """One error for every failed candidate: adapters tried, every failing field, raw completions."""
    failed = [s for s in slots if not s.ok]
    errors: list[FieldError] = []
    for slot in failed:
        assert slot.error is not None
        for err in slot.error.errors or [
            FieldError(
                field="(completion)", expected="the answer format", seen="", message=slot.error.summary
            )
        ]:
            if err not in errors:
                errors.append(err)
    kind = FieldValueError if all(isinstance(s.error, FieldValueError) for s in failed) else StructureError
    first = failed[0].error
    assert first is not None
    if len(slots) == 1:
        summary = first.summary
    else:
        summary = f"{len(failed)} of {len(slots)} candidates could not be parsed; first: {first.summary}"
    completions: list[Completion] = []
    for slot in slots:
        completions.extend(slot.history)
    return kind(
        summary,
        errors=errors,
        raw=failed[-1].completion.text,
        adapter=" -> ".join(adapter_names),
        completions=completions,
    )
