"""One adapter run's request, and stepping the call loop, written once as a generator of LM requests.

An :class:`AdapterCall` is what a run is about: the model, the signature, the demos, the inputs and
the request options, built once (by a program, or by ``Adapter.run``) and passed whole.

The loop (:func:`sigform.adapters.call_loop.run_loop`) yields each :class:`PlannedCall` it wants made
and returns its result. The sync driver, the async driver and the two-step adapter's extraction
sub-loop step it through one :class:`CallPlan`; they differ only in how a request gets answered
(a call, an await, a yield to the outer loop).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sigform.conversation import Layout
from sigform.errors import ContextWindowError
from sigform.lm.interface import Completion, LMProtocol
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.signatures import Signature

__all__ = ["AdapterCall", "CallPlan", "PlannedCall", "ResponseFormats"]

Result = TypeVar("Result")


@dataclass(frozen=True)
class AdapterCall:
    """One run of an adapter: ``lm`` answers ``signature`` for ``inputs``, shown ``demos`` (dicts
    of field values, or objects with ``to_dict()``); ``lm_kwargs`` are the request options
    (``temperature``, ``n``, ``tools``, ...). Built once, read by every step of the call loop."""

    lm: LMProtocol
    signature: type[Signature]
    demos: Sequence[object] | None = None
    inputs: Mapping[str, object] = field(default_factory=dict)
    lm_kwargs: Mapping[str, object] = field(default_factory=dict)

    def with_options(self, **changes: object) -> AdapterCall:
        """This call with some request options changed (``n=3``)."""
        return replace(self, lm_kwargs={**self.lm_kwargs, **changes})


@dataclass(frozen=True)
class ResponseFormats:
    """The response formats the JSON adapter tries for one request, best first (it steps down when
    a provider rejects one), and the signature whose outputs' schema they constrain. ``lenient``
    (a first answer) lets numbers and dates be written as the text does (``repair.lenient_values``);
    a retry of a refused value is strict."""

    modes: tuple[str, ...]
    signature: type[Signature]
    lenient: bool = False


@dataclass
class PlannedCall:
    """One LM request the call loop wants made: ``kwargs`` are the request options the LM gets;
    ``layout`` tells the driver which turns may be pruned and which prefix is stable (prompt-cache
    markers); ``lm`` is the LM it goes to when that is not the caller's (two-step extraction);
    ``formats`` are the response formats the adapter's ``send_request`` tries, if any."""

    messages: list[Message]
    kwargs: dict[str, Any]
    layout: Layout | None = None
    lm: LMProtocol | None = None
    formats: ResponseFormats | None = None


class CallPlan(Generic[Result]):
    """A call-loop generator, stepped: :attr:`request` is what it wants next (``None`` once it has
    finished), answered with :meth:`reply` or :meth:`fail`; then :attr:`result` holds its value."""

    __slots__ = ("_loop", "request", "result")

    def __init__(self, loop: Generator[PlannedCall, list[Completion], Result]) -> None:
        self._loop = loop
        self.request: PlannedCall | None = None
        self.result: Result
        self._advance(loop.send, None)

    def reply(self, completions: list[Completion]) -> None:
        """Answer the current request."""
        self._advance(self._loop.send, completions)

    def settle(self, outcome: list[Completion] | Exception) -> None:
        """Answer the current request with its completions, or report the exception it raised."""
        if isinstance(outcome, Exception):
            self.fail(outcome)
        else:
            self.reply(outcome)

    def fail(self, exc: Exception) -> None:
        """Report that the current request raised ``exc``; the loop may recover (a JSON
        response-format step-down) or lets ``exc`` propagate from here."""
        if isinstance(exc, ContextWindowError):
            # final: the request is already fitted to the window, asking again would not help
            self._loop.close()
            raise exc
        self._advance(self._loop.throw, exc)

    def _advance(self, step: Callable[[Any], PlannedCall], value: object) -> None:
        try:
            self.request = step(value)
        except StopIteration as stop:
            self.request = None
            self.result = stop.value
