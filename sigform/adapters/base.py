"""The adapter base class: how answers are read, what is requested, and the call's entry points.

The writing half (messages from a signature, demos and inputs) is
:class:`~sigform.adapters.formatting.PromptWriter`, which :class:`Adapter` extends. Subclasses
(chat, JSON, XML, two-step) supply their templates, how one value is written, which format their
answer is read in first and request options (stop sequences, response formats).
The call loop that sends, re-asks and falls back lives in :mod:`sigform.adapters.call_loop`;
:meth:`Adapter.run` and :meth:`Adapter.arun` drive it, and what an adapter decides there it
decides through its methods here (``attempt``, ``send_request``, ``finished_completion``, ...).

Tools: a signature with tool inputs and a ``ToolCalls`` output goes through native function
calling when the LM supports it (see :mod:`sigform.adapters.native_tools`); the prompt is then
written for the signature's text part and the native calls fill the ``ToolCalls`` outputs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict

from sigform.adapters.call_loop import RunState, adrive, attempt, drive, run_loop
from sigform.adapters.call_plan import AdapterCall, PlannedCall, ResponseFormats
from sigform.adapters.echo import mask_echoes
from sigform.adapters.extraction import Extracted, extract
from sigform.adapters.field_values import typed_outputs
from sigform.adapters.fields import FieldView, SigCache, field_views
from sigform.adapters.formatting import PromptWriter
from sigform.adapters.names import FieldMatcher
from sigform.adapters.native_tools import (
    TextSignature,
    calls_text,
    native_signature,
    outputs_with_calls,
    request_tools,
)
from sigform.adapters.parse_plan import ChatParsePlan, JSONParsePlan, build_parse_plan
from sigform.adapters.repair import RepairPlan
from sigform.adapters.result import AdapterResult, Slot
from sigform.adapters.templating import TemplateSet
from sigform.errors import ParseError, StructureError
from sigform.hooks import emit
from sigform.lm.interface import Completion, LMProtocol
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.adapters.json_adapter import JSONAdapter
    from sigform.signatures import Signature

__all__ = ["Adapter", "AdapterCall", "AdapterOptions", "PlannedCall"]


class AdapterOptions(TypedDict, total=False):
    """The options every adapter takes (see :class:`Adapter`); an adapter's own are keywords of
    its constructor. Typed so that a misspelled option is a type error, as it is at run time."""

    templates: Mapping[str, str] | None
    template_dir: str | os.PathLike[str] | None
    max_reasks: int
    fallback: Adapter | bool | None
    native_tools: bool


# per-process caches an adapter rebuilds empty when unpickled
_CACHES = (SigCache, RepairPlan)


class Adapter(PromptWriter):
    """Base class of every adapter; the call loop is :mod:`sigform.adapters.call_loop`.

    Args:
        templates: template sources overriding the built-in ones by name (``{"system": "..."}``).
        template_dir: a folder of ``<name>.jinja`` files overriding the built-in ones.
        max_reasks: how many times a candidate whose values do not validate is asked again.
        fallback: the adapter tried when the answer's structure is wrong (``False``: none;
            ``None``: the adapter's default, JSONAdapter for ChatAdapter).
        native_tools: send tool inputs natively and read ``ToolCalls`` outputs from native tool
            calls when the LM supports tools (``False``: always describe tools in the prompt).
    """

    name: ClassVar[str] = "Adapter"
    template_folder: ClassVar[str] = "chat"
    parse_order: ClassVar[tuple[str, ...]] = ("chat", "json", "xml")
    # text mode: an Optional output the inputs do not state is None (sigform.adapters.grounding)
    null_unstated: ClassVar[bool] = True

    def __init__(
        self,
        *,
        templates: Mapping[str, str] | None = None,
        template_dir: str | os.PathLike[str] | None = None,
        max_reasks: int = 1,
        fallback: Adapter | bool | None = None,
        native_tools: bool = True,
    ) -> None:
        if not isinstance(max_reasks, int) or max_reasks < 0:
            raise ValueError(f"max_reasks must be a non-negative integer, got {max_reasks!r}")
        self.templates = TemplateSet(self.template_folder, templates, template_dir)
        self.max_reasks = max_reasks
        self.native_tools = native_tools
        self._fallback_option = fallback
        self._fallback_given = fallback  # as given (ChatAdapter replaces its default when used)
        self._matchers: SigCache[FieldMatcher] = SigCache()
        self._parse_plans: SigCache[ChatParsePlan | JSONParsePlan | Literal[False]] = SigCache()
        self.repair_plan = RepairPlan()  # constrained retries of failing fields
        self._repair_json: JSONAdapter | None = None
        self._lock = threading.Lock()
        # the per-signature fast paths (request and parse plans); tests turn them off to compare
        # with the generic paths, which give the same results
        self._fast_paths = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_reasks={self.max_reasks})"

    def identity(self) -> dict[str, object]:
        """What decides this adapter's prompts and parsing, as JSON data: its class and settings.
        A checkpoint's program digest holds it, so rows another adapter wrote are not reused;
        a subclass with settings of its own adds them."""
        given = self._fallback_given
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "templates": self.templates.identity(),
            "max_reasks": self.max_reasks,
            "native_tools": self.native_tools,
            "fallback": given.identity() if isinstance(given, Adapter) else given,
        }

    # -- pickling (a program sent to another process, e.g. a Ray worker) -----------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The adapter's settings; its lock and caches stay in this process (rebuilt empty)."""
        state = {k: v for k, v in self.__dict__.items() if k != "_lock" and not isinstance(v, _CACHES)}
        state["_fresh_caches"] = [(k, type(v)) for k, v in self.__dict__.items() if isinstance(v, _CACHES)]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        fresh = state.pop("_fresh_caches", [])
        self.__dict__.update(state)
        self._lock = threading.Lock()
        for name, kind in fresh:
            if kind in _CACHES:  # only the cache types: nothing from the pickle decides what is built
                setattr(self, name, kind())

    # ---- parsing ---------------------------------------------------------------------------------

    def matcher(self, signature: type[Signature]) -> FieldMatcher:
        matcher = self._matchers.get(signature)
        if matcher is None:
            matcher = self._matchers.put(signature, FieldMatcher(signature.output_fields))
        return matcher

    def extract(self, signature: type[Signature], completion: str) -> Extracted:
        """Raw values per output field (own format first, then the others)."""
        return extract(completion, field_views(signature)[1], self.matcher(signature), self.parse_order)

    def parse(
        self, signature: type[Signature], completion: str, *, inputs: Mapping[str, object] | None = None
    ) -> dict[str, Any]:
        """Typed output values read from ``completion``.

        ``inputs`` (the call's input values) lets the parser ignore an echoed input: text that
        repeats an input never counts as the answer (:mod:`sigform.adapters.echo`).

        Raises :class:`StructureError` when the answer format was not followed (fields missing,
        a field given twice with different values, a value cut off) and :class:`FieldValueError`
        when a field was found but its value does not validate; both list every failing field and
        keep ``completion`` as ``raw``.
        """
        try:
            values = self._parse(signature, completion, inputs)
        except ParseError as exc:
            err = exc.with_context(raw=completion, adapter=self.name)
            emit("parse", adapter=self.name, signature=signature, completion=completion, error=err)
            raise err from None
        emit("parse", adapter=self.name, signature=signature, completion=completion, values=values)
        return values

    def _parse(
        self, signature: type[Signature], completion: str, inputs: Mapping[str, object] | None = None
    ) -> dict[str, object]:
        if not isinstance(completion, str):
            raise StructureError(f"expected the completion text as a str, got {type(completion).__name__}")
        echo = mask_echoes(completion, inputs) if inputs else None
        if self._fast_paths and echo is None:
            plan = self._parse_plans.get(signature)
            if plan is None:
                plan = self._parse_plans.put(signature, self._parse_plan(signature) or False)
            fast = plan.parse(completion) if plan else None
            if fast is not None:  # a clean answer whose values validate; else the full parser's verdict
                return fast
        views = field_views(signature)[1]
        if echo is None:
            found = self.extract(signature, completion)
        else:
            found = echo.merge(self.extract(signature, echo.masked), self.extract(signature, completion))
        return typed_outputs(found, views, self.structure_summary)

    def _parse_plan(self, signature: type[Signature]) -> ChatParsePlan | JSONParsePlan | None:
        """The clean-answer fast path for the format read first (with the base class's extraction)."""
        if type(self).extract is not Adapter.extract:
            return None
        return build_parse_plan(self.parse_order[0], field_views(signature)[1], self.matcher(signature))

    def structure_summary(
        self, found: Extracted, missing: Sequence[FieldView], views: Sequence[FieldView]
    ) -> str:
        if missing and len(missing) == len(views):
            why = f" ({found.note})" if found.note else ""
            return f"no output field found in the answer{why}; expected {self.format_name()}"
        if missing:
            return f"{len(missing)} of {len(views)} output field(s) missing"
        return "the answer's structure is ambiguous or cut off"

    def format_name(self) -> str:
        return "the requested format"

    # ---- requests --------------------------------------------------------------------------------

    def request_kwargs(self, call: AdapterCall, signature: type[Signature]) -> dict[str, Any]:
        """Keyword arguments of the LM request of ``call``, its prompt written for ``signature``
        (see :meth:`prompt_signature`). Extension point: subclasses call this first, then add
        ``stop`` or ``response_format``. For a :class:`TextSignature` (tools going natively) the
        request's ``tools`` are the tool inputs' tools, then the caller's own ``tools``."""
        kwargs = dict(call.lm_kwargs)
        if isinstance(signature, TextSignature):
            kwargs["tools"] = request_tools(signature.original, call.inputs, call.lm_kwargs.get("tools"))
        return kwargs

    def response_formats(
        self, lm: LMProtocol, signature: type[Signature], kwargs: Mapping[str, object]
    ) -> ResponseFormats | None:
        """The response formats a request with ``kwargs`` tries, read by :meth:`send_request`.
        Extension point: the JSON adapter's schema modes, best first (None: the request as is)."""
        return None

    def outputs_from_completion(
        self, signature: type[Signature], completion: Completion, inputs: Mapping[str, object] | None = None
    ) -> dict[str, Any]:
        """Typed outputs of one completion. Extension point: with tools going natively (a
        :class:`TextSignature`), the native tool calls fill the ``ToolCalls`` outputs and the
        other outputs are parsed from the text (rules in :mod:`sigform.adapters.native_tools`)."""
        if isinstance(signature, TextSignature):
            return outputs_with_calls(self, signature, completion, inputs)
        return self.parse(signature, completion.text, inputs=inputs)

    def prompt_signature(self, call: AdapterCall) -> Any:
        """The signature the prompt is written for: the call's, or its :class:`TextSignature`
        when tools go natively (``native_tools`` on, ``lm.supports("tools")``, tools given)."""
        if not self.native_tools:
            return call.signature
        return native_signature(call) or call.signature

    def answering(self, lm: LMProtocol) -> Adapter:
        """The adapter whose format answers for ``lm`` (itself; AutoAdapter picks one)."""
        return self

    def fallback_adapter(self) -> Adapter | None:
        """The adapter tried after a structural failure (``None``: no fallback)."""
        option = self._fallback_option
        if option is False or option is None:
            return None
        if option is True:
            raise ValueError(f"{self.name}: fallback=True needs an adapter instance")
        return option

    def fallback_for(self, failed: bool) -> Adapter | None:
        """The fallback adapter of a run where candidates ``failed`` structurally, looked up only
        then (ChatAdapter's default builds a JSONAdapter on first use); ``fallback=True``, which
        only ChatAdapter accepts, is checked on every run."""
        return self.fallback_adapter() if failed or self._fallback_option is True else None

    def send_request(
        self, lm: LMProtocol, state: RunState, request: PlannedCall
    ) -> Generator[PlannedCall, list[Completion], list[Completion]]:
        """Yield one request and count its answer. Extension point: the JSON adapter steps down
        its response format when a provider rejects it."""
        completions = yield request
        state.account(request, completions)
        return completions

    def reask_messages(
        self, signature: type[Signature], messages: list[Message], completion: Completion, error: ParseError
    ) -> list[Message]:
        """The conversation that asks for a corrected answer after value errors."""
        text = self.templates.render(
            "reask", errors=error.errors, outputs=field_views(signature)[1], summary=error.summary
        )
        answer = completion.text
        if completion.tool_calls and not (answer or "").strip():
            answer = calls_text(completion)  # an empty assistant turn is rejected by some providers
        return [
            *messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": text},
        ]

    # ---- the call loop (sigform.adapters.call_loop) ---------------------------------------------

    def loop(self, call: AdapterCall) -> Generator[PlannedCall, list[Completion], AdapterResult]:
        """One run as a generator of requests (stepped by :meth:`run`, :meth:`arun`, or another
        adapter's loop); see :func:`sigform.adapters.call_loop.run_loop`."""
        return run_loop(self, call)

    def attempt(
        self, call: AdapterCall, state: RunState
    ) -> Generator[PlannedCall, list[Completion], list[Slot]]:
        """One pass of this adapter in a run: format, send, read every candidate into a
        :class:`Slot`, ask again for failing values. Extension point (the two-step adapter answers
        freely, then extracts); see :func:`sigform.adapters.call_loop.attempt`."""
        return attempt(self, call, state)

    def finished_completion(
        self, signature: type[Signature], completion: Completion, kwargs: Mapping[str, object]
    ) -> Completion:
        """``completion`` as the adapter reads it (XML: with the stop sequence put back)."""
        return completion

    def complete_answer(self, text: str) -> bool:
        """Whether a length-stopped ``text`` still holds a whole answer (chat: the completed marker)."""
        return True

    def constrains(self, lm: LMProtocol) -> bool:
        """Whether this adapter's requests to ``lm`` constrain decoding to its answer format."""
        return False

    def constrained_json(self) -> JSONAdapter:
        """The JSONAdapter that sends constrained retries (this adapter itself, if it is one)."""
        if self._repair_json is None:
            from sigform.adapters.json_adapter import JSONAdapter

            self._repair_json = self if isinstance(self, JSONAdapter) else JSONAdapter(max_reasks=0)
        return self._repair_json

    # ---- drivers ---------------------------------------------------------------------------------

    def run_call(self, call: AdapterCall) -> AdapterResult:
        """Format, call the LM, parse (with reask and fallback); returns an :class:`AdapterResult`."""
        return drive(self.loop(call), call.lm)

    async def arun_call(self, call: AdapterCall) -> AdapterResult:
        """Async :meth:`run_call` (uses ``lm.acall``)."""
        return await adrive(self.loop(call), call.lm)

    def run(
        self,
        lm: LMProtocol,
        signature: type[Signature],
        demos: Sequence[object] | None,
        inputs: Mapping[str, object],
        **lm_kwargs: object,
    ) -> AdapterResult:
        """:meth:`run_call` of ``AdapterCall(lm, signature, demos, inputs, lm_kwargs)``."""
        return self.run_call(AdapterCall(lm, signature, demos, inputs, lm_kwargs))

    async def arun(
        self,
        lm: LMProtocol,
        signature: type[Signature],
        demos: Sequence[object] | None,
        inputs: Mapping[str, object],
        **lm_kwargs: object,
    ) -> AdapterResult:
        """Async :meth:`run`."""
        return await self.arun_call(AdapterCall(lm, signature, demos, inputs, lm_kwargs))

    def __call__(
        self,
        lm: LMProtocol,
        signature: type[Signature],
        demos: Sequence[object] | None,
        inputs: Mapping[str, object],
        **lm_kwargs: object,
    ) -> list[dict[str, Any]]:
        """One output dict per completion (``n > 1`` gives several)."""
        return self.run(lm, signature, demos, inputs, **lm_kwargs).outputs

    async def acall(
        self,
        lm: LMProtocol,
        signature: type[Signature],
        demos: Sequence[object] | None,
        inputs: Mapping[str, object],
        **lm_kwargs: object,
    ) -> list[dict[str, Any]]:
        """Async twin of :meth:`__call__`."""
        return (await self.arun(lm, signature, demos, inputs, **lm_kwargs)).outputs

    # ---- streaming ---------------------------------------------------------------------------------

    def stream_parser(self, signature: type[Signature]) -> Any:
        """An incremental parser: ``.feed(text_delta) -> list[FieldDelta]`` as the answer streams."""
        from sigform.adapters.streaming import StreamParser

        return StreamParser(signature, self.stream_format)

    stream_format: ClassVar[str] = "chat"
