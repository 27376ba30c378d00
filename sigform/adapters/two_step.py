"""TwoStepAdapter: a free-form answer first, then a typed extraction by a second LM call.

Strong reasoning models often answer best without a rigid output format. The main LM gets the
task and inputs and answers freely; an extraction LM (by default the same one) reads that answer
with a Chat or JSON adapter and returns the typed fields.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from sigform.adapters.base import Adapter, AdapterOptions
from sigform.adapters.call_loop import RunState, routed
from sigform.adapters.call_plan import AdapterCall, PlannedCall
from sigform.adapters.chat_scan import neutralise_markers
from sigform.adapters.fields import FieldView, SigCache
from sigform.adapters.output_limit import TEXT_FIELD_TOKENS, resolve_output_limit
from sigform.adapters.result import Slot
from sigform.errors import StructureError
from sigform.lm.interface import Completion, LMProtocol

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.signatures import Signature

__all__ = ["TwoStepAdapter"]

_RESPONSE_FIELD = "response"


class TwoStepAdapter(Adapter):
    """Free-form answer by the main LM, typed extraction by ``extraction_lm``.

    Args:
        extraction_lm: the LM that extracts the fields (default: the main LM).
        extraction_adapter: a :class:`ChatAdapter` or :class:`JSONAdapter` (default JSONAdapter).
    """

    name: ClassVar[str] = "TwoStepAdapter"
    template_folder: ClassVar[str] = "two_step"
    parse_order: ClassVar[tuple[str, ...]] = ("chat", "json", "xml", "labels")
    stream_format: ClassVar[str] = "chat"

    def __init__(
        self,
        extraction_lm: LMProtocol | None = None,
        extraction_adapter: Adapter | None = None,
        **options: Unpack[AdapterOptions],
    ) -> None:
        options.setdefault("fallback", False)
        super().__init__(**options)
        if extraction_adapter is None:
            from sigform.adapters.json_adapter import JSONAdapter

            extraction_adapter = JSONAdapter(max_reasks=self.max_reasks)
        if isinstance(extraction_adapter, TwoStepAdapter):
            raise TypeError("the extraction adapter of a TwoStepAdapter cannot be another TwoStepAdapter")
        self.extraction_lm = extraction_lm
        self.extraction_adapter = extraction_adapter
        # bounded: programs may build signatures per call
        self._extract_sigs: SigCache[type[Signature]] = SigCache()

    def identity(self) -> dict[str, object]:
        lm = self.extraction_lm
        dump = getattr(lm, "dump_state", None)
        return {
            **super().identity(),
            "extraction_adapter": self.extraction_adapter.identity(),
            "extraction_lm": None if lm is None else dump() if callable(dump) else type(lm).__qualname__,
        }

    def neutralise(self, text: str) -> str:
        return neutralise_markers(text)

    def render_output(self, value: object, view: FieldView) -> str:
        from sigform.adapters.chat import write_scalar_or_json

        return self.neutralise(write_scalar_or_json(self, value, view))

    def parse(
        self, signature: type[Signature], completion: str, *, inputs: Mapping[str, object] | None = None
    ) -> dict[str, Any]:
        """Read the fields when the text already holds them (``field: value`` lines, as in demos,
        or any structured format); a free-form answer needs the extraction call (:meth:`run`)."""
        return super().parse(signature, completion, inputs=inputs)

    def extraction_signature(self, signature: type[Signature]) -> type[Signature]:
        """``response -> <the outputs>``: what the extraction call answers."""
        cached = self._extract_sigs.get(signature)
        if cached is None:
            from sigform.signatures import InputField, make_signature

            name = _RESPONSE_FIELD
            while name in signature.output_fields:
                name += "_text"
            fields: dict[str, object] = {name: (str, InputField(desc="an answer written in free form"))}
            for spec in signature.output_fields.values():
                fields[spec.name] = spec
            cached = make_signature(
                fields,
                self.templates.render("extract_instructions", instructions=signature.instructions),
                name=f"{getattr(signature, '__name__', 'Signature')}Extraction",
            )
            self._extract_sigs.put(signature, cached)
        return cached

    def fallback_adapter(self) -> Adapter | None:
        """None: the extraction adapter falls back on its own."""
        return None

    def attempt(
        self, call: AdapterCall, state: RunState
    ) -> Generator[PlannedCall, list[Completion], list[Slot]]:
        """The free-form answer of the main LM, then one extraction run per candidate, its
        requests routed to the extraction LM (its errors are the run's errors)."""
        lm, signature = call.lm, call.signature
        messages, layout = self.format_with_layout(signature, call.demos, call.inputs)
        first = dict(call.lm_kwargs)
        limit = resolve_output_limit(lm, signature, call.lm_kwargs)
        if limit.tokens is not None and limit.source == "default":  # a text field's budget more
            first["max_tokens"] = limit.tokens + TEXT_FIELD_TOKENS
        completions = yield from self.send_request(lm, state, PlannedCall(messages, first, layout=layout))
        if not completions:
            raise StructureError("the LM returned no completion", adapter=self.name)
        extraction_sig = self.extraction_signature(signature)
        response_name = next(iter(extraction_sig.input_fields))
        extractor = self.extraction_adapter
        extraction_lm = self.extraction_lm or lm
        extra = {k: v for k, v in call.lm_kwargs.items() if k not in ("n", "stream")}
        slots: list[Slot] = []
        for completion in completions:
            if not (completion.text or "").strip():
                raise StructureError(
                    f"the main LM returned no text (finish_reason={completion.finish_reason!r})",
                    adapter=self.name,
                    completions=list(completions),
                )
            answer = {response_name: completion.text}
            extraction = AdapterCall(extraction_lm, extraction_sig, None, answer, extra)
            sub = yield from routed(extractor.loop(extraction), extraction_lm)
            state.absorb(sub)
            slots.append(Slot(completion, outputs=sub.outputs[0]))
        return slots
