"""The adapter base class: how a signature is written as messages and how answers are read.

Subclasses (chat, JSON, XML, two-step) supply their templates, how one value is written, which
format their answer is read in first and request options (stop sequences, response formats).
The call loop that sends, re-asks and falls back lives in :mod:`sigform.adapters.call_loop`;
:meth:`Adapter.run` and :meth:`Adapter.arun` drive it, and what an adapter decides there it
decides through its methods here (``attempt``, ``send_request``, ``finished_completion``, ...).

Tools: a signature with tool inputs and a ``ToolCalls`` output goes through native function
calling when the LM supports it (see :mod:`sigform.adapters.native_tools`); the prompt is then
written for the signature's text part and the native calls fill the ``ToolCalls`` outputs.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Generator, Mapping, Sequence
from typing import Any, ClassVar

from pydantic_core import to_jsonable_python

from sigform.adapters.call_loop import RunState, adrive, attempt, drive, run_loop
from sigform.adapters.call_plan import Request
from sigform.adapters.demo_cache import DemoCache
from sigform.adapters.echo import mask_echoes
from sigform.adapters.extraction import Extracted, extract
from sigform.adapters.fields import FieldView, SigCache, field_views
from sigform.adapters.messages import MediaCollector, assemble_with_layout, demo_to_dict, render_demos
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
from sigform.adapters.request_plan import build_request_plan
from sigform.adapters.result import AdapterResult, Slot
from sigform.adapters.templating import TemplateSet
from sigform.conversation import Layout
from sigform.errors import FieldError, FieldValueError, ParseError, StructureError
from sigform.hooks import emit
from sigform.lm.interface import Completion, LMProtocol
from sigform.types.render import plain_text

__all__ = ["Adapter", "Request"]

Message = dict[str, Any]
_MARK_RE = re.compile("\x01(\\d+)\x02")
_RENDERING = (
    "user_message",
    "assistant_text",
    "render_input",
    "plain_input",
    "render_output",
    "neutralise",
    "_render_user",
    "_user_pieces",
)


class Adapter:
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
        self._matchers = SigCache()
        self._parse_plans = SigCache()
        self.repair_plan = RepairPlan()  # constrained retries of failing fields
        self._repair_json: Adapter | None = None
        self._lock = threading.Lock()
        # the per-signature fast paths (request and parse plans); tests turn them off to compare
        # with the generic paths, which give the same results
        self._fast_paths = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_reasks={self.max_reasks})"

    @property
    def templates(self) -> TemplateSet:
        """The adapter's templates; assigning new ones drops everything rendered with the old."""
        return self._templates

    @templates.setter
    def templates(self, value: TemplateSet) -> None:
        self._templates = value
        self._system_cache = SigCache()
        self._user_cache = SigCache()
        self._request_plans = SigCache()
        self._demo_caches = SigCache()

    # ---- formatting ------------------------------------------------------------------------------

    def format(
        self, signature: Any, demos: Sequence[Any] | None = None, inputs: Mapping[str, Any] | None = None
    ) -> list[Message]:
        """The chat messages for ``signature``, few-shot ``demos`` and ``inputs``."""
        return self.format_with_layout(signature, demos, inputs)[0]

    def format_with_layout(
        self, signature: Any, demos: Sequence[Any] | None = None, inputs: Mapping[str, Any] | None = None
    ) -> tuple[list[Message], Layout]:
        """:meth:`format`, and which messages are the stable prefix (system, demos) and which
        History turns may be pruned to fit the context window (see :mod:`sigform.conversation`)."""
        if inputs is not None and self._fast_paths:
            plan = self._request_plans.get(signature)
            if plan is None:
                plan = self._request_plans.put(signature, build_request_plan(self, signature) or False)
            if plan:
                shown = self.demo_messages(signature, demos) if demos else None
                fast = plan.messages(self, inputs)
                if fast is not None:
                    layout = plan.layout
                    if shown:
                        fast[1:1] = shown
                        layout = Layout(1 + len(shown), ())
                    emit("format", adapter=self.name, signature=signature, messages=fast)
                    return fast, layout
        messages, layout = assemble_with_layout(self, signature, demos, inputs or {})
        emit("format", adapter=self.name, signature=signature, messages=messages)
        return messages, layout

    def demo_messages(self, signature: Any, demos: Sequence[Any]) -> list[Message]:
        """The user/assistant messages of ``demos``, rendered once per signature and demo values
        (see :mod:`sigform.adapters.demo_cache`); fresh dicts on every call."""
        data = [demo_to_dict(demo, i) for i, demo in enumerate(demos)]
        if not self._fast_paths or not self.own_rendering():
            return render_demos(self, signature, data)
        cache = self._demo_caches.get(signature)
        if cache is None:
            cache = self._demo_caches.put(signature, DemoCache())
        return cache.messages(data, lambda: render_demos(self, signature, data))

    @classmethod
    def own_rendering(cls) -> bool:
        """Whether every method that renders a message is sigform's own (a user's subclass may
        render from state the demo cache cannot see: its demos are rendered every time)."""
        return all(getattr(cls, name).__module__.startswith("sigform.") for name in _RENDERING)

    @classmethod
    def standard_formatting(cls) -> bool:
        """Whether this class writes messages with the base class's methods (only then can the
        per-signature request plan stand in for them)."""
        return all(
            getattr(cls, name) is getattr(Adapter, name)
            for name in ("system_message", "user_message", "render_input", "_render_user", "_user_pieces")
        )

    def system_message(self, signature: Any) -> str:
        """The system message of ``signature`` (rendered once per signature, then cached)."""
        cached = self._system_cache.get(signature)
        if cached is None:
            inputs, outputs = field_views(signature)
            shown = [v for v in inputs if v.kind != "history"]
            native = isinstance(signature, TextSignature)
            if native and not outputs:  # the tool calls are the whole answer
                cached = self.templates.render(
                    "native_tools_system",
                    inputs=shown,
                    instructions=signature.instructions,
                    calls=signature.call_outputs,
                )
            else:
                cached = self.templates.render(
                    "system",
                    inputs=shown,
                    outputs=outputs,
                    instructions=signature.instructions,
                    **self.system_context(signature, outputs),
                )
            if native and outputs:
                note = self.templates.render(
                    "native_tools_note", calls=signature.call_outputs, outputs=outputs
                )
                cached = f"{cached}\n\n{note}"
            self._system_cache.put(signature, cached)
        return cached

    def system_context(self, signature: Any, outputs: Sequence[FieldView]) -> dict[str, Any]:
        """Extra variables for the system template (subclasses add schemas, skeletons, ...)."""
        return {}

    def user_message(
        self,
        signature: Any,
        views: Sequence[FieldView],
        values: Mapping[str, Any],
        *,
        main: bool,
        missing: Sequence[str] = (),
    ) -> Message:
        """A user message holding ``values`` of the input fields ``views`` (media as parts)."""
        tools_only = main and isinstance(signature, TextSignature) and not signature.output_fields
        if tools_only:  # no output to ask for: the request line asks for tool calls instead
            main = False
        media = MediaCollector()
        plain = self._fast_paths and type(self).render_input is Adapter.render_input
        texts: list[str] = []
        for v in views:
            value = values[v.name]
            if plain and type(value) is str and v.annotation is str:
                texts.append(self.plain_input(value))
            else:
                texts.append(media.value_text(value, v, self.render_input))
        pieces = None if self.templates.overridden else self._user_pieces(signature, views, main, missing)
        if pieces is not None:  # cached rendering of the wording; only the values are new
            out = [pieces[0]]
            for value, literal in zip(texts, pieces[1:], strict=True):
                out.append(value)
                out.append(literal)
            text = "".join(out).strip()
        else:
            text = self._render_user(signature, views, texts, main, missing)
        if tools_only:
            text = f"{text}\n\n{self.templates.render('native_tools_request')}"
        return {"role": "user", "content": media.content(text)}

    def _render_user(
        self,
        signature: Any,
        views: Sequence[FieldView],
        texts: Sequence[str],
        main: bool,
        missing: Sequence[str],
    ) -> str:
        fields = [{"name": v.name, "value": t} for v, t in zip(views, texts, strict=True)]
        note = self.templates.render("demo_note", missing=list(missing)) if missing else ""
        return self.templates.render(
            "user", fields=fields, main=main, note=note, outputs=field_views(signature)[1]
        )

    def _user_pieces(
        self, signature: Any, views: Sequence[FieldView], main: bool, missing: Sequence[str]
    ) -> list[str] | None:
        """The user template rendered once with markers in place of values, split around them."""
        per_sig = self._user_cache.get(signature)
        if per_sig is None:
            per_sig = self._user_cache.put(signature, {})
        key = (tuple(v.name for v in views), main, tuple(missing))
        pieces = per_sig.get(key, False)
        if pieces is False:
            marks = [f"\x01{i}\x02" for i in range(len(views))]
            rendered = self._render_user(signature, views, marks, main, missing)
            split = _MARK_RE.split(rendered)
            literals, order = split[0::2], [int(i) for i in split[1::2]]
            pieces = literals if order == list(range(len(views))) else None
            per_sig[key] = pieces
        return pieces

    def assistant_text(
        self, signature: Any, views: Sequence[FieldView], values: Mapping[str, Any], *, complete: bool = True
    ) -> str:
        """An assistant message holding ``values`` of the output fields ``views``."""
        fields = [{"name": v.name, "value": self.render_output(values[v.name], v)} for v in views]
        return self.templates.render("assistant", fields=fields, complete=complete)

    def format_assistant(self, signature: Any, outputs: Mapping[str, Any]) -> str:
        """The answer text this adapter expects for ``outputs`` (what :meth:`parse` reads back)."""
        views = field_views(signature)[1]
        absent = [v.name for v in views if v.name not in outputs]
        if absent:
            raise ValueError(f"format_assistant: outputs lack field(s) {absent}")
        return self.assistant_text(signature, views, outputs, complete=True)

    def render_input(self, value: Any, view: FieldView) -> str:
        """One input value as text, with anything that could forge structure neutralised.

        NUL characters go before neutralising: removed after it, ``[\\x00[`` would become ``[[``."""
        from sigform.types import render_value

        return self.neutralise(render_value(value, view.annotation).replace("\x00", ""))

    def plain_input(self, value: str) -> str:
        """:meth:`render_input` of a ``str`` value of a ``str`` field, in short."""
        text = plain_text(value)
        return self.neutralise(text.replace("\x00", "") if "\x00" in text else text)

    def render_output(self, value: Any, view: FieldView) -> str:
        """One output value as this adapter's answer format writes it."""
        raise NotImplementedError

    def neutralise(self, text: str) -> str:
        """User text made inert in this adapter's vocabulary."""
        return text

    @staticmethod
    def jsonable(value: Any) -> Any:
        return to_jsonable_python(value, fallback=str)

    # ---- parsing ---------------------------------------------------------------------------------

    def matcher(self, signature: Any) -> FieldMatcher:
        matcher = self._matchers.get(signature)
        if matcher is None:
            matcher = self._matchers.put(signature, FieldMatcher(signature.output_fields))
        return matcher

    def extract(self, signature: Any, completion: str) -> Extracted:
        """Raw values per output field (own format first, then the others)."""
        return extract(completion, field_views(signature)[1], self.matcher(signature), self.parse_order)

    def parse(
        self, signature: Any, completion: str, *, inputs: Mapping[str, Any] | None = None
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
        self, signature: Any, completion: str, inputs: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        from sigform.types import coerce_fields

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
        structural: list[FieldError] = []
        for name, seen in found.conflicts.items():
            view = next(v for v in views if v.name == name)
            structural.append(
                FieldError(
                    name,
                    view.type_name,
                    " | ".join(map(_brief, seen)),
                    "the field is given more than once with different values",
                )
            )
        for name, problem in found.problems.items():
            view = next(v for v in views if v.name == name)
            structural.append(FieldError(name, view.type_name, _brief(found.values.get(name)), problem))
        bad = {e.field for e in structural}
        present = {
            v.name: found.values[v.name] for v in views if v.name in found.values and v.name not in bad
        }
        annotations = {v.name: v.validation_annotation for v in views if v.name in present}
        errors: list[FieldError] = []
        values: dict[str, Any] = {}
        try:
            values = coerce_fields(present, annotations)
        except FieldValueError as exc:
            errors = list(exc.errors)
        missing = [v for v in views if v.name not in found.values and v.name not in bad]
        if missing or structural:
            for view in missing:
                structural.append(FieldError(view.name, view.type_name, "(nothing)", "the field is missing"))
            summary = self.structure_summary(found, missing, views)
            raise StructureError(summary, errors=structural + errors)
        if errors:
            raise FieldValueError(f"{len(errors)} field value(s) do not validate", errors=errors)
        return {v.name: values[v.name] for v in views}

    def _parse_plan(self, signature: Any) -> ChatParsePlan | JSONParsePlan | None:
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

    def request_kwargs(
        self, lm: LMProtocol, signature: Any, inputs: Mapping[str, Any], lm_kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Keyword arguments of the LM request. Extension point: subclasses call this first, then
        add ``stop`` or ``response_format``. For a :class:`TextSignature` (tools going natively)
        the request's ``tools`` are the tool inputs' tools, then the caller's own ``tools``."""
        kwargs = dict(lm_kwargs)
        if isinstance(signature, TextSignature):
            kwargs["tools"] = request_tools(signature.original, inputs, lm_kwargs.get("tools"))
        return kwargs

    def outputs_from_completion(
        self, signature: Any, completion: Completion, inputs: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Typed outputs of one completion. Extension point: with tools going natively (a
        :class:`TextSignature`), the native tool calls fill the ``ToolCalls`` outputs and the
        other outputs are parsed from the text (rules in :mod:`sigform.adapters.native_tools`)."""
        if isinstance(signature, TextSignature):
            return outputs_with_calls(self, signature, completion)
        return self.parse(signature, completion.text, inputs=inputs)

    def prompt_signature(
        self, lm: LMProtocol, signature: Any, inputs: Mapping[str, Any], lm_kwargs: Mapping[str, Any]
    ) -> Any:
        """The signature the prompt is written for: ``signature``, or its :class:`TextSignature`
        when tools go natively (``native_tools`` on, ``lm.supports("tools")``, tools given)."""
        if not self.native_tools:
            return signature
        return native_signature(lm, signature, inputs, lm_kwargs) or signature

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
        self, lm: LMProtocol, state: RunState, request: Request
    ) -> Generator[Request, Any, list[Completion]]:
        """Yield one request and count its answer. Extension point: the JSON adapter steps down
        its response format when a provider rejects it."""
        completions = yield request
        state.account(request, completions)
        return completions

    def reask_messages(
        self, signature: Any, messages: list[Message], completion: Completion, error: ParseError
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

    def loop(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        lm_kwargs: Mapping[str, Any],
    ) -> Generator[Request, Any, AdapterResult]:
        """One run as a generator of requests (stepped by :meth:`run`, :meth:`arun`, or another
        adapter's loop); see :func:`sigform.adapters.call_loop.run_loop`."""
        return run_loop(self, lm, signature, demos, inputs, lm_kwargs)

    def attempt(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        lm_kwargs: Mapping[str, Any],
        state: RunState,
    ) -> Generator[Request, Any, list[Slot]]:
        """One pass of this adapter in a run: format, send, read every candidate into a
        :class:`Slot`, ask again for failing values. Extension point (the two-step adapter answers
        freely, then extracts); see :func:`sigform.adapters.call_loop.attempt`."""
        return attempt(self, lm, signature, demos, inputs, lm_kwargs, state)

    def finished_completion(
        self, signature: Any, completion: Completion, kwargs: Mapping[str, Any]
    ) -> Completion:
        """``completion`` as the adapter reads it (XML: with the stop sequence put back)."""
        return completion

    def complete_answer(self, text: str) -> bool:
        """Whether a length-stopped ``text`` still holds a whole answer (chat: the completed marker)."""
        return True

    def constrains(self, lm: LMProtocol) -> bool:
        """Whether this adapter's requests to ``lm`` constrain decoding to its answer format."""
        return False

    def constrained_json(self) -> Any:
        """The JSONAdapter that sends constrained retries (this adapter itself, if it is one)."""
        if self._repair_json is None:
            from sigform.adapters.json_adapter import JSONAdapter

            self._repair_json = self if isinstance(self, JSONAdapter) else JSONAdapter(max_reasks=0)
        return self._repair_json

    # ---- drivers ---------------------------------------------------------------------------------

    def run(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        **lm_kwargs: Any,
    ) -> AdapterResult:
        """Format, call ``lm``, parse (with reask and fallback); returns an :class:`AdapterResult`."""
        return drive(self.loop(lm, signature, demos, inputs, lm_kwargs), lm)

    async def arun(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        **lm_kwargs: Any,
    ) -> AdapterResult:
        """Async twin of :meth:`run` (uses ``lm.acall``)."""
        return await adrive(self.loop(lm, signature, demos, inputs, lm_kwargs), lm)

    def __call__(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        **lm_kwargs: Any,
    ) -> list[dict[str, Any]]:
        """One output dict per completion (``n > 1`` gives several)."""
        return self.run(lm, signature, demos, inputs, **lm_kwargs).outputs

    async def acall(
        self,
        lm: LMProtocol,
        signature: Any,
        demos: Sequence[Any] | None,
        inputs: Mapping[str, Any],
        **lm_kwargs: Any,
    ) -> list[dict[str, Any]]:
        """Async twin of :meth:`__call__`."""
        return (await self.arun(lm, signature, demos, inputs, **lm_kwargs)).outputs

    # ---- streaming ---------------------------------------------------------------------------------

    def stream_parser(self, signature: Any) -> Any:
        """An incremental parser: ``.feed(text_delta) -> list[FieldDelta]`` as the answer streams."""
        from sigform.adapters.streaming import StreamParser

        return StreamParser(signature, self.stream_format)

    stream_format: ClassVar[str] = "chat"


def _brief(value: Any) -> str:
    from sigform.errors import shorten

    return shorten(value, 80)
