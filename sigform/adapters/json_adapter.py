"""JSONAdapter: the outputs as one JSON object, with native structured outputs when available.

Request modes, best first: a strict JSON schema (``response_format`` ``json_schema``, when
``lm.supports("json_schema")``), JSON-object mode carrying the schema (llama.cpp and others
constrain generation with it), plain JSON-object mode, then plain text. When the provider
rejects a schema request (:class:`~sigform.errors.BadRequestError`, or a
:class:`~sigform.errors.ProviderError` such as llama.cpp's HTTP 500 on ``json_schema``), the
adapter steps down one mode and logs it once on the ``sigform.adapters`` logger. What an endpoint
(model and ``api_base``) accepted is remembered for the process and, once a lower mode has
answered, in the cache folder for other processes (:mod:`sigform.lm.capabilities`). Each mode is
tried at most once per request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from sigform.adapters.base import Adapter, AdapterOptions
from sigform.adapters.call_loop import RunState
from sigform.adapters.call_plan import PlannedCall, ResponseFormats
from sigform.adapters.chat_scan import neutralise_markers
from sigform.adapters.fields import FieldView, SigCache, field_views
from sigform.errors import BadRequestError, ProviderError
from sigform.jsonvalue import JSONObject
from sigform.lm import capabilities
from sigform.lm.capabilities import MODES
from sigform.lm.interface import Completion, LMProtocol
from sigform.lm.model import LM

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.signatures import Signature

__all__ = ["MODES", "JSONAdapter", "forget_step_downs"]

logger = logging.getLogger("sigform.adapters")
_DECLARED = ("json_schema", "json_object")  # capabilities a user may declare for these modes


def forget_step_downs() -> None:
    """Forget every step-down this process learned (tests, or after changing a server's
    configuration); the file in the cache folder stays (``capabilities.forget(disk=True)``)."""
    capabilities.forget()


class JSONAdapter(Adapter):
    """One JSON object holding every output field (see the module docstring)."""

    name: ClassVar[str] = "JSONAdapter"
    template_folder: ClassVar[str] = "json"
    parse_order: ClassVar[tuple[str, ...]] = ("json", "chat", "xml")
    stream_format: ClassVar[str] = "json"

    def __init__(self, *, structured_outputs: bool = True, **options: Unpack[AdapterOptions]) -> None:
        options.setdefault("fallback", False)
        super().__init__(**options)
        self.structured_outputs = structured_outputs
        self._schemas: SigCache[dict[bool, dict[str, Any]]] = SigCache()

    def identity(self) -> dict[str, object]:
        return {**super().identity(), "structured_outputs": self.structured_outputs}

    # ---- formatting ---------------------------------------------------------------------------

    def strict_schema(self, signature: type[Signature], *, lenient: bool = False) -> dict[str, Any]:
        """The strict JSON schema of the output object (cached per signature); ``lenient``: the
        first request's, with numbers and dates as the text writes them (see ``repair``)."""
        schemas = self._schemas.get(signature)
        if schemas is None:
            schemas = self._schemas.put(signature, {})
        schema = schemas.get(lenient)
        if schema is None:
            from sigform.adapters.repair import constrained_schema

            annotations = {v.name: v.validation_annotation for v in field_views(signature)[1]}
            schema = schemas[lenient] = constrained_schema(annotations, lenient=lenient)
        return schema

    def system_context(self, signature: type[Signature], outputs: Any) -> dict[str, Any]:
        from sigform.types import json_schema
        from sigform.types.schema import take_defs

        properties = {v.name: json_schema(v.validation_annotation) for v in outputs}
        defs: JSONObject = {}
        for prop in properties.values():
            defs.update(take_defs(prop))
        schema: dict[str, object] = {
            "type": "object",
            "properties": properties,
            "required": [v.name for v in outputs],
        }
        if defs:
            schema["$defs"] = defs
        from sigform.types.shape import object_shape

        shape = object_shape([(v.name, v.validation_annotation, v.desc) for v in outputs])
        return {"schema": json.dumps(schema, ensure_ascii=False, separators=(", ", ": ")), "shape": shape}

    def neutralise(self, text: str) -> str:
        return neutralise_markers(text)

    def render_output(self, value: object, view: FieldView) -> Any:
        return self.jsonable(value)

    def assistant_text(
        self, signature: type[Signature], views: Any, values: Mapping[str, object], *, complete: bool = True
    ) -> str:
        obj = {v.name: self.jsonable(values[v.name]) for v in views}
        return self.templates.render("assistant", json=json.dumps(obj, ensure_ascii=False))

    answer_label: ClassVar[str] = "JSON:"
    one_line_answer: ClassVar[bool] = True

    def record_answer(self, signature: type[Signature], views: Any, values: Mapping[str, object]) -> str:
        obj = {v.name: self.jsonable(values[v.name]) for v in views}
        return f"{self.answer_label} {json.dumps(obj, ensure_ascii=False)}"

    def format_name(self) -> str:
        return "one JSON object with the output fields as keys"

    # ---- requests -----------------------------------------------------------------------------

    def constrains(self, lm: LMProtocol) -> bool:
        return self.modes_for(lm)[0] != "text"

    def modes_for(self, lm: LMProtocol) -> list[str]:
        """The request modes to try for ``lm``, best first, after remembered step-downs."""
        modes: list[str] = []
        if self.structured_outputs and lm.supports("json_schema"):
            modes.append("json_schema")
        if lm.supports("json_object") or lm.supports("json_schema"):
            modes += ["json_object_schema", "json_object"] if self.structured_outputs else ["json_object"]
        modes.append("text")
        # a rejection seen in this process always counts; what another process saved does not
        # when the user declared the structured-output abilities (capabilities={...})
        declared = getattr(lm, "capabilities", None) or {}
        floor = capabilities.best_mode(_model_key(lm), saved=not any(f in declared for f in _DECLARED))
        return [m for m in modes if MODES.index(m) >= floor]

    def response_format(
        self, mode: str, signature: type[Signature], *, lenient: bool = False
    ) -> dict[str, Any] | None:
        if mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(signature),
                    "strict": True,
                    "schema": self.strict_schema(signature, lenient=lenient),
                },
            }
        if mode == "json_object_schema":
            return {"type": "json_object", "schema": self.strict_schema(signature, lenient=lenient)}
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def response_formats(
        self, lm: LMProtocol, signature: type[Signature], kwargs: Mapping[str, object]
    ) -> ResponseFormats | None:
        if "response_format" in kwargs or not signature.output_fields:
            return None  # the caller decided, or only native tool calls are asked for
        # a first answer: numbers and dates as the text writes them
        return ResponseFormats(tuple(self.modes_for(lm)), signature, lenient=True)

    def send_request(
        self, lm: LMProtocol, state: RunState, request: PlannedCall
    ) -> Generator[PlannedCall, list[Completion], list[Completion]]:
        if request.formats is None:
            return (yield from super().send_request(lm, state, request))
        modes, signature = request.formats.modes, request.formats.signature
        for i, mode in enumerate(modes):
            attempt = dict(request.kwargs)
            fmt = self.response_format(mode, signature, lenient=request.formats.lenient)
            if fmt is not None:
                attempt["response_format"] = fmt
            try:
                completions = yield replace(request, kwargs=attempt)
            except (BadRequestError, ProviderError) as exc:
                last = i + 1 == len(modes)
                rejected = isinstance(exc, BadRequestError) or mode == "json_schema"
                if last or fmt is None or not rejected:
                    raise
                _step_down(lm, mode, modes[i + 1], exc)
                state.attempts += 1
                continue
            state.account(replace(request, kwargs=attempt), completions)
            capabilities.record_answered(_model_key(lm), mode, persist=_persistable(lm))
            return completions
        raise AssertionError("unreachable: the text mode always answers or raises")


def _model_key(lm: LMProtocol) -> str:
    # per model and endpoint: one model name may be served by servers of different abilities
    model = str(getattr(lm, "model", "") or type(lm).__name__)
    base = getattr(lm, "api_base", None)
    return capabilities.endpoint_key(model, base if isinstance(base, str) else None)


def _persistable(lm: LMProtocol) -> bool:
    """Whether what ``lm``'s endpoint accepted is worth saving for other processes: a sigform LM
    at a fixed http(s) endpoint (not the embedded model, whose port changes with every server)."""
    base = lm.api_base if isinstance(lm, LM) else None
    return isinstance(base, str) and base.startswith(("http://", "https://")) and lm.model != "local"


def _schema_name(signature: type[Signature]) -> str:
    name = getattr(signature, "__name__", "") or "outputs"
    clean = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)[:64]
    return clean or "outputs"


def _step_down(lm: LMProtocol, mode: str, next_mode: str, exc: Exception) -> None:
    key = _model_key(lm)
    if not capabilities.record_rejected(key, mode, next_mode):
        return
    logger.warning(
        "model %r rejected the %s response format (%s); using %s for this model from now on",
        key,
        mode,
        type(exc).__name__,
        next_mode,
    )
