"""Output fields as Arrow columns: one typed column per output field, from its declared type.

The column types come from the signature, not from the values, so every batch has the same
schema -- also a batch whose rows all failed (their cells are null). The conversions:

============================================  =====================================================
declared type                                 column
============================================  =====================================================
``str``, ``int``, ``float``, ``bool``         ``string``, ``int64``, ``double``, ``bool``
``datetime.date``, ``datetime.datetime``      ``string``: ISO 8601 (``2024-05-01``,
                                              ``2024-05-01T09:30:00+02:00``)
``Enum``                                      its value (``string`` / ``int64``; other values JSON)
``Literal[...]``                              ``string`` / ``int64`` / ``bool`` when all choices
                                              are of that type, else JSON text
``X | None``                                  as ``X``, null for None
models, lists, dicts, other unions            ``string``: JSON text (``model_dump(mode="json")``)
============================================  =====================================================

Dates are ISO text rather than Arrow dates: Ray 2.60 writes JSON through pandas, which cannot
write an Arrow ``date32`` column (pandas 3.1: "as_unit not implemented for date32[day]"), and
text keeps a datetime's offset; ``pyarrow.compute.strptime`` or ``pandas.to_datetime`` read it.

The error column is a struct ``{type: string, message: string}``, null for rows that succeeded.
"""

from __future__ import annotations

import datetime
import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

__all__ = ["ERROR_TYPE", "ColumnPlan", "column_plan"]

ERROR_TYPE = pa.struct([("type", pa.string()), ("message", pa.string())])

Convert = Callable[[Any], Any]


def _json_text(value: object) -> str:
    from pydantic_core import to_jsonable_python

    return json.dumps(to_jsonable_python(value), ensure_ascii=False)


def _same(value: object) -> object:
    return value


def _enum_value(value: object) -> object:
    return value.value if isinstance(value, enum.Enum) else value


def _iso(value: datetime.date | datetime.time) -> str:
    return value.isoformat()


_JSON: tuple[pa.DataType, Convert] = (pa.string(), _json_text)
_SCALARS: dict[type, pa.DataType] = {str: pa.string(), bool: pa.bool_(), int: pa.int64(), float: pa.float64()}


def _choices_column(values: list[object], convert: Convert) -> tuple[pa.DataType, Convert]:
    """One Arrow type for a set of choices (Literal values, Enum values), else JSON text."""
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and next(iter(kinds)) in _SCALARS:
        return _SCALARS[next(iter(kinds))], convert
    return pa.string(), lambda value: _json_text(convert(value))


def column_type(annotation: object) -> tuple[pa.DataType, Convert]:
    """The Arrow type of a field declared as ``annotation`` and how a value becomes a cell."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return column_type(members[0]) if len(members) == 1 else _JSON
    if origin is typing.Literal:
        return _choices_column(list(typing.get_args(annotation)), _same)
    if annotation in _SCALARS:
        return _SCALARS[annotation], (float if annotation is float else _same)
    if annotation in (datetime.datetime, datetime.date):
        return pa.string(), _iso
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _choices_column([m.value for m in annotation], _enum_value)
    return _JSON


class ColumnPlan:
    """The output columns of a program: names, Arrow types, and how to fill them."""

    def __init__(self, outputs: Mapping[str, object], error_column: str) -> None:
        self.types = {name: column_type(annotation) for name, annotation in outputs.items()}
        self.error_column = error_column
        if error_column in self.types:
            raise ValueError(
                f"output field {error_column!r} clashes with the error column; pass error_column= "
                "another name"
            )

    def columns(self, results: list[Any], errors: list[BaseException | None]) -> dict[str, pa.Array]:
        """Arrow arrays for one batch: every output field, then the error column."""
        out: dict[str, pa.Array] = {}
        for name, (arrow_type, convert) in self.types.items():
            cells = [None if r is None or _missing(r, name) else _cell(r[name], convert) for r in results]
            out[name] = pa.array(cells, type=arrow_type)
        out[self.error_column] = pa.array(
            [None if e is None else {"type": type(e).__name__, "message": str(e)} for e in errors],
            type=ERROR_TYPE,
        )
        return out


def _missing(result: Any, name: str) -> bool:
    try:
        result[name]
    except (KeyError, AttributeError, TypeError):
        return True
    return False


def _cell(value: object, convert: Convert) -> object:
    return None if value is None else convert(value)


def column_plan(program: object, outputs: Mapping[str, object] | None, error_column: str) -> ColumnPlan:
    """The plan for ``program``: its signature's output fields, or ``outputs`` (name -> type)
    for a program without one signature."""
    if outputs is None:
        signature = getattr(program, "signature", None)
        if signature is None:
            raise TypeError(
                f"{type(program).__name__} has no single signature to take output columns from; pass "
                "outputs={'field': type, ...} naming the fields its predictions carry"
            )
        outputs = {name: spec.annotation for name, spec in signature.output_fields.items()}
    return ColumnPlan(outputs, error_column)
