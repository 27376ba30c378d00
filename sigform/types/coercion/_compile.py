"""Compile an annotation into its converter node (called once per annotation by ``plan_for``)."""

from __future__ import annotations

import collections.abc as cabc
import datetime as dt
import decimal
import typing
from typing import Any, Literal, Union

from sigform.types.coercion._choices import EnumNode, LiteralNode
from sigform.types.coercion._collections import DictNode, SeqNode, TupleNode
from sigform.types.coercion._dates import DateNode
from sigform.types.coercion._numbers import CurrencyField, DescribedCurrency, percent_allowed
from sigform.types.coercion._plan import Node, plan_for
from sigform.types.coercion._records import RecordNode
from sigform.types.coercion._scalars import (
    AnyNode,
    BoolNode,
    DecimalNode,
    FloatNode,
    HookNode,
    IntNode,
    NoneNode,
    StrNode,
    TextParsedNode,
)
from sigform.types.coercion._union import UnionNode
from sigform.types.inspection import (
    NoneType,
    args_of,
    is_dataclass_type,
    is_enum_type,
    is_model_type,
    is_typeddict_type,
    literal_values,
    origin_of,
    split_optional,
    strip_annotated,
)

__all__ = ["compile_node"]

_LISTS = {list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection}
_SETS = {set: set, cabc.Set: set, cabc.MutableSet: set, frozenset: frozenset}
_DICTS = {dict, cabc.Mapping, cabc.MutableMapping}
_NUMBERISH = (decimal.Decimal,)


class AnnotatedNode(Node):
    """``Annotated[T, ...]``: T's node; pydantic enforces the metadata (constraints)."""

    needs_validation = True

    def __init__(self, annotation: object, inner: Node, currency: str | None = None) -> None:
        super().__init__(annotation)
        self.inner = inner
        self.currency = currency  # the currency the field's description gives (numbers only)

    def convert(self, value: object, name: str, text: bool) -> object:
        if self.currency is not None:
            name = CurrencyField(name, self.currency, percent=percent_allowed(name))
        return self.inner.convert(value, name, text)

    def fit(self, value: object, text: bool) -> float:
        return self.inner.fit(value, text)

    def __getattr__(self, item: str) -> object:  # is_record etc. come from the inner node
        return getattr(self.inner, item)


def compile_node(annotation: object) -> Node:
    base, metadata = strip_annotated(annotation)
    if metadata:
        currency = next((m for m in metadata if isinstance(m, DescribedCurrency)), None)
        return AnnotatedNode(annotation, plan_for(base), None if currency is None else str(currency))
    return _compile(base)


def _compile(tp: Any) -> Node:
    if tp is None or tp is NoneType:
        return NoneNode(tp)
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return AnyNode(tp)
    if isinstance(tp, type) and hasattr(tp, "__sigform_coerce__"):
        return HookNode(tp)
    if is_enum_type(tp):
        return EnumNode(tp)
    if tp is bool:
        return BoolNode(tp)
    if tp is int:
        return IntNode(tp)
    if tp is float:
        return FloatNode(tp)
    if tp is str:
        return StrNode(tp)
    origin = origin_of(tp)
    if origin is Literal:
        return LiteralNode(tp, literal_values(tp))
    if origin is Union:
        rest, allows_none = split_optional(tp)
        members = args_of(rest) if origin_of(rest) is Union else (rest,)
        return UnionNode(tp, tuple(members), allows_none)
    if is_model_type(tp) or is_dataclass_type(tp) or is_typeddict_type(tp):
        return RecordNode(tp)
    container = origin if origin is not None else tp
    args = args_of(tp)
    if container in _LISTS:
        return SeqNode(tp, args[0] if args else Any, list)
    if container in _SETS:
        return SeqNode(tp, args[0] if args else Any, _SETS[container])
    if container is tuple:
        if not args:
            return SeqNode(tp, Any, tuple)
        if len(args) == 2 and args[1] is Ellipsis:
            return SeqNode(tp, args[0], tuple)
        if args == ((),):
            return TupleNode(tp, ())
        return TupleNode(tp, args)
    if container in _DICTS:
        return DictNode(tp, args[0] if args else str, args[1] if len(args) > 1 else Any)
    if tp is dt.date:
        return DateNode(tp)
    if isinstance(tp, type) and issubclass(tp, (dt.date, dt.time, dt.timedelta)):
        return TextParsedNode(tp)
    if isinstance(tp, type) and issubclass(tp, decimal.Decimal):
        return DecimalNode(tp)
    if isinstance(tp, type):
        return TextParsedNode(tp, accept_numbers=issubclass(tp, _NUMBERISH) or tp not in (bytes,))
    return AnyNode(tp)
