"""XMLAdapter: one ``<field>...</field>`` element per output; lists and models as nested elements.

Lists are written as ``<item>`` children, dicts and models as one child element per key (a key
that is not a valid element name falls back to a JSON payload), ``None`` as an empty element.
Inputs are escaped, so user text can never open or close an element. Parsing is tolerant (see
:mod:`sigform.adapters.xml_scan`).

The closing tag of the last output field is sent as a stop sequence (where the LM supports stop
sequences and no nested element carries that name), so generation ends with the answer: a small
model otherwise writes more elements, or junk, up to ``max_tokens``. A null last field is written
self-closing (``<due_date/>``), which that tag never matches, so the self-closing forms are stop
sequences too, without their ``<``: a server leaves the stop sequence out of the text, and the
``<`` left at the end tells which one fired (a model that stops by itself never leaves one). The
stop text is put back before parsing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import regex

from sigform.adapters.base import Adapter, AdapterOptions
from sigform.adapters.call_plan import AdapterCall
from sigform.adapters.chat_scan import neutralise_markers
from sigform.adapters.extraction import _base, _item_annotation, _model_fields
from sigform.adapters.fields import FieldView, SigCache, field_views, kind_of
from sigform.adapters.xml_scan import escape_text
from sigform.lm.interface import Completion

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.signatures import Signature

__all__ = ["XMLAdapter"]

_NAME_RE = regex.compile(r"\A[A-Za-z_][\w.\-]{0,80}\Z")
_MAX_SKELETON_DEPTH = 4


class XMLAdapter(Adapter):
    """One element per output field (see the module docstring)."""

    name: ClassVar[str] = "XMLAdapter"
    template_folder: ClassVar[str] = "xml"
    parse_order: ClassVar[tuple[str, ...]] = ("xml", "json", "chat")
    stream_format: ClassVar[str] = "xml"

    def __init__(self, *, use_stop: bool = True, **options: Unpack[AdapterOptions]) -> None:
        super().__init__(**options)
        self.use_stop = use_stop
        self._stop_tags: SigCache[tuple[str, ...]] = SigCache()

    def identity(self) -> dict[str, object]:
        return {**super().identity(), "use_stop": self.use_stop}

    def stop_tag(self, signature: type[Signature]) -> str | None:
        """The closing tag that ends an answer (the last output's), or ``None`` when an element
        nested in some output carries the same name (stopping there would cut the answer)."""
        stops = self.stop_sequences(signature)
        return stops[0] if stops else None

    def stop_sequences(self, signature: type[Signature]) -> list[str]:
        """The stop sequences that end an answer: the last output's closing tag, then its
        self-closing forms without the ``<`` (left out where another element's name ends with
        the last one's: ``<other_due_date/>`` would match them); empty when no stop is safe."""
        cached = self._stop_tags.get(signature)
        if cached is None:
            outputs = field_views(signature)[1]
            last = outputs[-1].name if outputs else ""
            nested: set[str] = set()
            for view in outputs:
                _nested_names(view.annotation, nested, 0)
            stops: tuple[str, ...] = ()
            if last and last not in nested and "*" not in nested:
                stops = (f"</{last}>",)
                others = {v.name.lower() for v in outputs[:-1]} | {n.lower() for n in nested}
                if not any(name.endswith(last.lower()) for name in others):
                    stops += (f"{last}/>", f"{last} />")
            cached = self._stop_tags.put(signature, stops)
        return list(cached)

    def request_kwargs(self, call: AdapterCall, signature: type[Signature]) -> dict[str, Any]:
        kwargs = super().request_kwargs(call, signature)
        stops = self.stop_sequences(signature) if self.use_stop and signature.output_fields else []
        if stops and "stop" not in kwargs and call.lm.supports("stop"):
            kwargs["stop"] = stops
        return kwargs

    def finished_completion(
        self, signature: type[Signature], completion: Completion, kwargs: Mapping[str, object]
    ) -> Completion:
        """``completion`` with our stop sequence put back when it ended the answer: the closing
        tag when the last element was opened after every closing of it and is still open; the
        self-closing form when the text ends with the ``<`` that only that stop leaves."""
        stops = self.stop_sequences(signature)
        text = completion.text
        # ours come last: a text model's request lists its document's record stop first
        sent = kwargs.get("stop")
        ours = bool(stops) and isinstance(sent, (list, tuple)) and list(sent[-len(stops) :]) == stops
        if not ours or completion.finish_reason != "stop" or not text:
            return completion
        tag = stops[0]
        opened = max(text.rfind(f"<{tag[2:-1]}>"), text.rfind(f"<{tag[2:-1]} "))
        if opened >= 0 and text.find(tag, opened) < 0:
            return dataclasses.replace(completion, text=text + tag)
        if len(stops) > 1 and text.endswith("<"):
            return dataclasses.replace(completion, text=text + stops[1])
        return completion

    def neutralise(self, text: str) -> str:
        # chat headers too: the XML parser falls back to reading them, and no adapter's user text
        # may carry one (an LM echoing it would hand the parser a forged field)
        return escape_text(neutralise_markers(text))

    def system_context(self, signature: type[Signature], outputs: Any) -> dict[str, Any]:
        skeletons = [self._skeleton(v.name, v.annotation, 0) for v in outputs if v.kind in ("list", "model")]
        return {"skeletons": skeletons}

    def _skeleton(self, name: str, annotation: object, depth: int) -> str:
        kind, _ = kind_of(annotation)
        pad = "  " * depth
        if depth >= _MAX_SKELETON_DEPTH:
            return f"{pad}<{name}>...</{name}>"
        if kind == "model":
            inner = "\n".join(
                self._skeleton(field, ann, depth + 1)
                for field, ann in _model_fields(_base(annotation)).items()
            )
            return f"{pad}<{name}>\n{inner}\n{pad}</{name}>"
        if kind == "list":
            item = self._skeleton("item", _item_annotation(annotation, 0), depth + 1)
            return f"{pad}<{name}>\n{item}\n{pad}</{name}>"
        from sigform.types import type_name

        return f"{pad}<{name}>{escape_text(type_name(annotation))}</{name}>"

    def render_output(self, value: object, view: FieldView) -> str:
        return self._element(view.name, value, view.annotation)

    def _element(self, name: str, value: Any, annotation: object) -> str:
        from sigform.types import render_value

        if value is None:
            return f"<{name}/>"
        kind, _ = kind_of(annotation)
        jsonable = self.jsonable(value)
        if kind == "list" and isinstance(jsonable, list) and jsonable:
            item = _item_annotation(annotation, 0)
            items = value if isinstance(value, (list, tuple)) else list(value)
            return f"<{name}>" + "".join(self._element("item", v, item) for v in items) + f"</{name}>"
        if (
            kind in ("dict", "model")
            and isinstance(jsonable, dict)
            and jsonable
            and all(isinstance(k, str) and _NAME_RE.match(k) for k in jsonable)
        ):
            if kind == "model":
                fields = _model_fields(_base(annotation))
                children = [
                    self._element(k, getattr(value, k), fields.get(k, Any)) for k in fields if k in jsonable
                ]
            else:
                value_ann = _item_annotation(annotation, -1)
                children = [self._element(k, v, value_ann) for k, v in value.items()]
            return f"<{name}>" + "".join(children) + f"</{name}>"
        if kind in ("list", "dict", "model", "other") and not isinstance(value, (str, int, float, bool)):
            return f"<{name}>{escape_text(json.dumps(jsonable, ensure_ascii=False))}</{name}>"
        return f"<{name}>{escape_text(render_value(value, annotation))}</{name}>"

    def assistant_text(
        self, signature: type[Signature], views: Any, values: Mapping[str, object], *, complete: bool = True
    ) -> str:
        fields = [{"name": v.name, "value": self.render_output(values[v.name], v)} for v in views]
        return self.templates.render("assistant", fields=fields, complete=complete)

    def answer_prefix(self, signature: type[Signature], outputs: Sequence[FieldView]) -> str:
        # the tag's name without its end: the model closes it as `>value` or, for null, `/>`
        return f"<{outputs[0].name}" if outputs else ""

    def format_name(self) -> str:
        return "one XML element per output field"


def _nested_names(annotation: object, into: set[str], depth: int) -> None:
    """Names of the elements nested in a value of ``annotation`` (model fields, ``item``)."""
    if depth >= _MAX_SKELETON_DEPTH * 2:
        return
    kind, _ = kind_of(annotation)
    if kind == "model":
        for name, ann in _model_fields(_base(annotation)).items():
            into.add(name)
            _nested_names(ann, into, depth + 1)
    elif kind == "list":
        into.add("item")
        _nested_names(_item_annotation(annotation, 0), into, depth + 1)
    elif kind == "dict":
        into.add("*")  # keys are element names we cannot know: any name may be nested
        _nested_names(_item_annotation(annotation, -1), into, depth + 1)
