"""The writing half of every adapter: a signature, demos and inputs as chat messages.

:class:`PromptWriter` renders the system message (once per signature), the user and assistant
messages of demos (cached per demo values, :mod:`sigform.adapters.demo_cache`), the final user
message (the template's wording rendered once, only the values new) and single values as text,
neutralised so that no input can forge the answer format. :class:`~sigform.adapters.Adapter`
adds the reading half and the call; subclasses override the methods here to change the wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic_core import to_jsonable_python

from sigform.adapters.demo_cache import DemoCache
from sigform.adapters.document import Document, label, write_document
from sigform.adapters.fields import FieldView, SigCache, field_views
from sigform.adapters.messages import MediaCollector, assemble_with_layout, demo_to_dict, render_demos
from sigform.adapters.native_tools import TextSignature
from sigform.adapters.request_plan import RequestPlan, build_request_plan
from sigform.adapters.templating import TemplateSet
from sigform.conversation import Layout
from sigform.hooks import emit
from sigform.message import Message
from sigform.types.render import plain_text

if TYPE_CHECKING:
    from sigform.adapters.native_tools import TextSignature
    from sigform.signatures import Signature

__all__ = ["PromptWriter"]

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


class PromptWriter:
    """How an adapter writes messages; the templates come from :attr:`template_folder`."""

    name: ClassVar[str] = "Adapter"
    template_folder: ClassVar[str] = "chat"
    _fast_paths: bool  # the per-signature fast paths; tests turn them off to compare

    @property
    def templates(self) -> TemplateSet:
        """The adapter's templates; assigning new ones drops everything rendered with the old."""
        return self._templates

    @templates.setter
    def templates(self, value: TemplateSet) -> None:
        self._templates = value
        self._system_cache: SigCache[str] = SigCache()
        # per signature: (field names, main, missing outputs) -> the user template's pieces
        self._user_cache: SigCache[dict[tuple[tuple[str, ...], bool, tuple[str, ...]], list[str] | None]]
        self._user_cache = SigCache()
        self._request_plans: SigCache[RequestPlan | Literal[False]] = SigCache()
        self._demo_caches: SigCache[DemoCache] = SigCache()

    def format(
        self,
        signature: type[Signature],
        demos: Sequence[object] | None = None,
        inputs: Mapping[str, object] | None = None,
    ) -> list[Message]:
        """The chat messages for ``signature``, few-shot ``demos`` and ``inputs``."""
        return self.format_with_layout(signature, demos, inputs)[0]

    def format_with_layout(
        self,
        signature: type[Signature],
        demos: Sequence[object] | None = None,
        inputs: Mapping[str, object] | None = None,
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

    # ---- completion mode (a model without a chat template: sigform.adapters.document) ----------

    answer_label: ClassVar[str] = ""  # what introduces a record's answer ("JSON:"); "" for none
    one_line_answer: ClassVar[bool] = False  # a record's answer never spans lines (JSON)

    def document(
        self,
        signature: type[Signature],
        demos: Sequence[object] | None = None,
        inputs: Mapping[str, object] | None = None,
    ) -> Document:
        """The request for a text-completion model: one plain-text few-shot document (see
        :mod:`sigform.adapters.document`)."""
        doc = write_document(self, signature, demos, inputs or {})
        messages: list[Message] = [{"role": "user", "content": doc.text}]
        emit("format", adapter=self.name, signature=signature, messages=messages)
        return doc

    def document_head(self, signature: type[Signature], outputs: Sequence[FieldView], has_demos: bool) -> str:
        """What comes before the records: the instructions, and without demos, the output fields
        with their descriptions."""
        head = (signature.instructions or "").strip()
        if has_demos:
            return head
        fields = "\n".join(f"{label(v)}: {v.desc or v.type_name}" for v in outputs)
        return f"{head}\n\nAnswer with:\n{fields}".strip()

    def record_answer(
        self, signature: type[Signature], views: Sequence[FieldView], values: Mapping[str, object]
    ) -> str:
        """A demo record's answer, in this adapter's answer format."""
        return self.assistant_text(signature, views, values, complete=False).strip()

    def answer_prefix(self, signature: type[Signature], outputs: Sequence[FieldView]) -> str:
        """The start of an answer written into the document's cue (the first field's marker): put
        back before the continuation is read. Empty for a format that needs none."""
        return ""

    def demo_messages(self, signature: type[Signature], demos: Sequence[object]) -> list[Message]:
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
            getattr(cls, name) is getattr(PromptWriter, name)
            for name in ("system_message", "user_message", "render_input", "_render_user", "_user_pieces")
        )

    def system_message(self, signature: type[Signature]) -> str:
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
                    calls=cast("TextSignature", signature).call_outputs,
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
                    "native_tools_note", calls=cast("TextSignature", signature).call_outputs, outputs=outputs
                )
                cached = f"{cached}\n\n{note}"
            self._system_cache.put(signature, cached)
        return cached

    def system_context(self, signature: type[Signature], outputs: Sequence[FieldView]) -> dict[str, Any]:
        """Extra variables for the system template (subclasses add schemas, skeletons, ...)."""
        return {}

    def user_message(
        self,
        signature: type[Signature],
        views: Sequence[FieldView],
        values: Mapping[str, object],
        *,
        main: bool,
        missing: Sequence[str] = (),
    ) -> Message:
        """A user message holding ``values`` of the input fields ``views`` (media as parts)."""
        tools_only = main and isinstance(signature, TextSignature) and not signature.output_fields
        if tools_only:  # no output to ask for: the request line asks for tool calls instead
            main = False
        media = MediaCollector()
        plain = self._fast_paths and type(self).render_input is PromptWriter.render_input
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
        signature: type[Signature],
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
        self, signature: type[Signature], views: Sequence[FieldView], main: bool, missing: Sequence[str]
    ) -> list[str] | None:
        """The user template rendered once with markers in place of values, split around them."""
        per_sig = self._user_cache.get(signature)
        if per_sig is None:
            per_sig = self._user_cache.put(signature, {})
        key = (tuple(v.name for v in views), main, tuple(missing))
        if key not in per_sig:
            marks = [f"\x01{i}\x02" for i in range(len(views))]
            rendered = self._render_user(signature, views, marks, main, missing)
            split = _MARK_RE.split(rendered)
            literals, order = split[0::2], [int(i) for i in split[1::2]]
            per_sig[key] = literals if order == list(range(len(views))) else None
        return per_sig[key]

    def assistant_text(
        self,
        signature: type[Signature],
        views: Sequence[FieldView],
        values: Mapping[str, object],
        *,
        complete: bool = True,
    ) -> str:
        """An assistant message holding ``values`` of the output fields ``views``."""
        fields = [{"name": v.name, "value": self.render_output(values[v.name], v)} for v in views]
        return self.templates.render("assistant", fields=fields, complete=complete)

    def format_assistant(self, signature: type[Signature], outputs: Mapping[str, object]) -> str:
        """The answer text this adapter expects for ``outputs`` (what :meth:`parse` reads back)."""
        views = field_views(signature)[1]
        absent = [v.name for v in views if v.name not in outputs]
        if absent:
            raise ValueError(f"format_assistant: outputs lack field(s) {absent}")
        return self.assistant_text(signature, views, outputs, complete=True)

    def render_input(self, value: object, view: FieldView) -> str:
        """One input value as text, with anything that could forge structure neutralised.

        NUL characters go before neutralising: removed after it, ``[\\x00[`` would become ``[[``."""
        from sigform.types import render_value

        return self.neutralise(render_value(value, view.annotation).replace("\x00", ""))

    def plain_input(self, value: str) -> str:
        """:meth:`render_input` of a ``str`` value of a ``str`` field, in short."""
        text = plain_text(value)
        return self.neutralise(text.replace("\x00", "") if "\x00" in text else text)

    def render_output(self, value: object, view: FieldView) -> str:
        """One output value as this adapter's answer format writes it."""
        raise NotImplementedError

    def neutralise(self, text: str) -> str:
        """User text made inert in this adapter's vocabulary."""
        return text

    @staticmethod
    def jsonable(value: object) -> Any:
        return to_jsonable_python(value, fallback=str)
