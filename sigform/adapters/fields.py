"""How adapters see a signature field: its name, readable type, description and *kind*.

The kind decides the wording of a field's hint (``int`` -> "an integer", a model -> its JSON
schema or nested elements) and how a parser reads its raw text. Views are computed once per
signature and cached, because signatures are immutable, hashable values.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

from sigform.types._typing import (
    is_enum_type,
    is_model_type,
    origin_of,
    split_optional,
    strip_annotated,
)

__all__ = ["FieldView", "field_views", "kind_of", "value_kind"]

Kind = Literal["str", "int", "float", "bool", "choice", "list", "dict", "model", "media", "history", "other"]

# kinds whose text is one closed-set token: a cut-off value cannot pass for a complete one
CLOSED_KINDS = frozenset({"bool", "choice"})
STRUCTURED_KINDS = frozenset({"list", "dict", "model", "other"})


@dataclass(frozen=True)
class FieldView:
    """A field as templates and parsers use it (plain data, safe to hand to jinja2)."""

    name: str
    type_name: str
    desc: str
    kind: str
    nullable: bool
    choices: tuple[str, ...]
    schema: str | None
    constraints: tuple[str, ...]
    annotation: Any
    validation_annotation: Any


def kind_of(annotation: Any) -> tuple[str, bool]:
    """``(kind, nullable)`` of an annotation (``Optional[int]`` -> ``("int", True)``)."""
    base, _ = strip_annotated(annotation)
    base, nullable = split_optional(base)
    base, _ = strip_annotated(base)
    return value_kind(base), nullable


def value_kind(base: Any) -> str:
    """The kind of an annotation without ``Optional`` / ``Annotated`` around it."""
    if base is str:
        return "str"
    if base is bool:
        return "bool"
    if base is int:
        return "int"
    if base is float:
        return "float"
    if is_enum_type(base) or origin_of(base) is Literal:
        return "choice"
    name = getattr(base, "__name__", "")
    if getattr(base, "__module__", "").startswith("sigform.types"):
        if name in ("Image", "Audio", "File"):
            return "media"
        if name == "History":
            return "history"
    if is_model_type(base):
        return "model"
    origin = origin_of(base)
    if base in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        return "list"
    if base is dict or origin is dict:
        return "dict"
    return "other"


def _schema_text(schema: Any) -> str | None:
    return None if schema is None else json.dumps(schema, ensure_ascii=False, separators=(", ", ": "))


@functools.lru_cache(maxsize=512)
def field_views(signature: Any) -> tuple[tuple[FieldView, ...], tuple[FieldView, ...]]:
    """``(inputs, outputs)`` views of ``signature`` (cached per signature value)."""
    from sigform.types import describe_type, type_name

    def view(spec: Any, with_schema: bool) -> FieldView:
        kind, nullable = kind_of(spec.annotation)
        described = describe_type(spec.validation_annotation)
        return FieldView(
            name=spec.name,
            type_name=type_name(spec.annotation),
            desc=spec.desc,
            kind=kind,
            nullable=nullable or described.optional,
            choices=described.choices if kind == "choice" else (),
            schema=_schema_text(described.schema) if with_schema and kind in STRUCTURED_KINDS else None,
            constraints=described.constraints,
            annotation=spec.annotation,
            validation_annotation=spec.validation_annotation,
        )

    inputs = tuple(view(s, False) for s in signature.input_fields.values())
    outputs = tuple(view(s, True) for s in signature.output_fields.values())
    return inputs, outputs
