"""XMLAdapter: one ``<field>...</field>`` element per output; lists and models as nested elements.

Lists are written as ``<item>`` children, dicts and models as one child element per key (a key
that is not a valid element name falls back to a JSON payload), ``None`` as an empty element.
Inputs are escaped, so user text can never open or close an element. Parsing is tolerant (see
:mod:`sigform.adapters.xml_scan`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import regex

from sigform.adapters.base import Adapter
from sigform.adapters.chat_scan import neutralise_markers
from sigform.adapters.extraction import _base, _item_annotation, _model_fields
from sigform.adapters.fields import FieldView, kind_of
from sigform.adapters.xml_scan import escape_text

__all__ = ["XMLAdapter"]

_NAME_RE = regex.compile(r"\A[A-Za-z_][\w.\-]{0,80}\Z")
_MAX_SKELETON_DEPTH = 4


class XMLAdapter(Adapter):
    """One element per output field (see the module docstring)."""

    name: ClassVar[str] = "XMLAdapter"
    template_folder: ClassVar[str] = "xml"
    parse_order: ClassVar[tuple[str, ...]] = ("xml", "json", "chat")
    stream_format: ClassVar[str] = "xml"

    def neutralise(self, text: str) -> str:
        # chat headers too: the XML parser falls back to reading them, and no adapter's user text
        # may carry one (an LM echoing it would hand the parser a forged field)
        return escape_text(neutralise_markers(text))

    def system_context(self, signature: Any, outputs: Any) -> dict[str, Any]:
        skeletons = [self._skeleton(v.name, v.annotation, 0) for v in outputs if v.kind in ("list", "model")]
        return {"skeletons": skeletons}

    def _skeleton(self, name: str, annotation: Any, depth: int) -> str:
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

    def render_output(self, value: Any, view: FieldView) -> str:
        return self._element(view.name, value, view.annotation)

    def _element(self, name: str, value: Any, annotation: Any) -> str:
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
        self, signature: Any, views: Any, values: Mapping[str, Any], *, complete: bool = True
    ) -> str:
        fields = [{"name": v.name, "value": self.render_output(values[v.name], v)} for v in views]
        return self.templates.render("assistant", fields=fields, complete=complete)

    def format_name(self) -> str:
        return "one XML element per output field"
