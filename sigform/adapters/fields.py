"""How adapters see a signature field: its name, readable type, description and *kind*.

The kind decides the wording of a field's hint (``int`` -> "an integer", a model -> its JSON
schema or nested elements) and how a parser reads its raw text. Views are computed once per
signature and cached, because signatures are immutable, hashable values.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from sigform.types.inspection import (
    is_enum_type,
    is_model_type,
    origin_of,
    split_optional,
    strip_annotated,
)

if TYPE_CHECKING:
    from typing import TypeAlias, Union

    from sigform.adapters.native_tools import TextSignature
    from sigform.signatures import Signature

    # what adapters read fields from: a signature class, or its text part when tools go natively
    SignatureView: TypeAlias = Union[type[Signature], TextSignature]

__all__ = ["FieldView", "SigCache", "field_views", "kind_of", "value_kind"]

_V = TypeVar("_V")

Kind = Literal[
    "str",
    "int",
    "float",
    "bool",
    "choice",
    "date",
    "datetime",
    "time",
    "list",
    "dict",
    "model",
    "media",
    "history",
    "other",
]

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
    shape: str | None
    annotation: Any
    validation_annotation: Any


def kind_of(annotation: object) -> tuple[str, bool]:
    """``(kind, nullable)`` of an annotation (``Optional[int]`` -> ``("int", True)``)."""
    base, _ = strip_annotated(annotation)
    base, nullable = split_optional(base)
    base, _ = strip_annotated(base)
    return value_kind(base), nullable


def value_kind(base: object) -> str:
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
    if isinstance(base, type) and issubclass(base, (datetime.date, datetime.time)):
        # datetime subclasses date: test it first
        if issubclass(base, datetime.datetime):
            return "datetime"
        return "date" if issubclass(base, datetime.date) else "time"
    name = getattr(base, "__name__", "")
    if getattr(base, "__module__", "").startswith("sigform.types"):
        if name in ("Image", "Audio", "File"):
            return "media"
        if name == "History":
            return "history"
        if name == "ToolCalls":  # arguments are free JSON: nested XML elements would lose their types
            return "other"
    if is_model_type(base):
        return "model"
    origin = origin_of(base)
    if base in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        return "list"
    if base is dict or origin is dict:
        return "dict"
    return "other"


def _shape(schema: Any) -> str | None:
    from sigform.types.shape import schema_shape

    return None if schema is None else schema_shape(schema, schema.get("$defs", {}))


def _schema_text(schema: object) -> str | None:
    return None if schema is None else json.dumps(schema, ensure_ascii=False, separators=(", ", ": "))


class SigCache(Generic[_V]):
    """Per-signature cache keyed by identity first (hashing a signature walks all its fields),
    then by value, so equal signatures built twice share entries. Bounded; thread-safe enough:
    a race only computes a value twice."""

    __slots__ = ("_by_id", "_by_value", "limit")

    def __init__(self, limit: int = 1024) -> None:
        self._by_id: dict[int, tuple[SignatureView, _V]] = {}
        self._by_value: dict[SignatureView, _V] = {}
        self.limit = limit

    def get(self, signature: SignatureView) -> _V | None:
        hit = self._by_id.get(id(signature))
        if hit is not None and hit[0] is signature:
            return hit[1]
        try:
            value = self._by_value.get(signature)
        except TypeError:
            return None
        if value is not None:
            self._remember(signature, value)
        return value

    def put(self, signature: SignatureView, value: _V) -> _V:
        try:
            self._by_value[signature] = value
        except TypeError:
            pass
        self._remember(signature, value)
        return value

    def _remember(self, signature: SignatureView, value: _V) -> None:
        if len(self._by_id) >= self.limit:
            self._by_id.clear()
            self._by_value.clear()
        self._by_id[id(signature)] = (signature, value)  # the strong ref keeps the id unique


_VIEWS: SigCache[tuple[tuple[FieldView, ...], tuple[FieldView, ...]]] = SigCache()


def field_views(signature: SignatureView) -> tuple[tuple[FieldView, ...], tuple[FieldView, ...]]:
    """``(inputs, outputs)`` views of ``signature`` (cached per signature)."""
    hit = _VIEWS.get(signature)
    if hit is None:
        hit = _VIEWS.put(signature, _build_views(signature))
    return hit


def _build_views(signature: SignatureView) -> tuple[tuple[FieldView, ...], tuple[FieldView, ...]]:
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
            shape=_shape(described.schema) if with_schema and kind in STRUCTURED_KINDS else None,
            annotation=spec.annotation,
            validation_annotation=spec.validation_annotation,
        )

    inputs = tuple(view(s, False) for s in signature.input_fields.values())
    outputs = tuple(view(s, True) for s in signature.output_fields.values())
    return inputs, outputs
