"""A function tool made of several steps, each receiving the previous step's output.

The first step takes the LM's (validated) arguments as keyword arguments, so its signature is the
tool's schema; every later step takes one positional argument, the previous step's value. A step
that returns an error :class:`~sigform.tools.result.ToolResult` (or raises) stops the chain and that
error is the tool's result::

    fetch_title = sf.Tool([fetch_page, extract_title], name="fetch_title")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sigform.errors import ToolError
from sigform.tools._invoke import invoke
from sigform.tools.result import ToolResult, as_result

__all__ = ["Chain"]


class Chain:
    """An ordered list of step callables (sync or async) run as one tool call."""

    def __init__(self, steps: Sequence[Callable[..., object]]) -> None:
        steps = list(steps)
        if not steps:
            raise ToolError("a chained tool needs at least one step")
        for i, step in enumerate(steps):
            if not callable(step):
                raise ToolError(f"chain step #{i + 1} is not callable: {step!r}")
        self.steps: tuple[Callable[..., Any], ...] = tuple(steps)

    @property
    def first(self) -> Callable[..., Any]:
        """The step whose parameters are the tool's arguments."""
        return self.steps[0]

    async def run(self, args: dict[str, Any]) -> ToolResult:
        """Run every step in order; stop at the first error."""
        value: object = await invoke(self.first, **args)
        for step in self.steps[1:]:
            if isinstance(value, ToolResult):
                if not value.ok:
                    return value
                value = value.value
            value = await invoke(step, value)
        return as_result(value)

    def __repr__(self) -> str:
        names = " -> ".join(getattr(s, "__name__", type(s).__name__) for s in self.steps)
        return f"Chain({names})"
