"""Typed comparison of a predicted value with its gold label, driven by the field's annotation.

* scalars (``str``, ``int``, ``bool``, Literals, enums, dates, ...): exact match (text is compared
  after stripping surrounding whitespace; ``case_sensitive=False`` also ignores case);
* ``float``: equal within ``float_tolerance`` (absolute), else within 1e-9 relative;
* lists and tuples: multiset F1 (order ignored, duplicates counted); sets: set F1;
* pydantic models, dataclasses, TypedDicts and dicts: per leaf -- the mean over the gold value's
  leaves, so a record with one wrong field out of four scores 0.75;
* ``None`` matches only ``None``.

Gold values are validated against the annotation first (``"2024-03-01"`` becomes a ``date``,
a dict a model), so a dataset written as JSON compares with typed predictions. A gold value
that does not validate is compared as written.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_type_hints

from sigform.probes import probe
from sigform.types.inspection import (
    args_of,
    cache_key,
    is_dataclass_type,
    is_model_type,
    is_typeddict_type,
    origin_of,
    split_optional,
    strip_annotated,
)

__all__ = ["Comparison", "compare"]

_MAX_ADAPTERS = 256
_adapters: dict[object, object] = {}
_adapters_lock = threading.Lock()


@dataclass(frozen=True)
class Comparison:
    """How strictly values are compared (see the module docstring)."""

    float_tolerance: float | None = None
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        tol = self.float_tolerance
        if tol is not None and (not isinstance(tol, (int, float)) or isinstance(tol, bool) or tol < 0):
            raise ValueError(f"float_tolerance must be a non-negative number or None, got {tol!r}")


def _type_adapter(annotation: Any) -> Any:
    key = cache_key(annotation)
    with _adapters_lock:
        found = _adapters.get(key)
    if found is None:
        from pydantic import TypeAdapter

        found = TypeAdapter(annotation)
        with _adapters_lock:
            if len(_adapters) >= _MAX_ADAPTERS:
                _adapters.clear()
            _adapters[key] = found
    return found


def typed_gold(value: object, annotation: object) -> object:
    """``value`` validated as ``annotation`` (lax: JSON-style gold data), or as is if it does not fit."""
    if annotation is Any or value is None:
        return value
    return probe("gold value as its type", lambda: _type_adapter(annotation).validate_python(value), value)


def compare(
    predicted: object, gold: object, annotation: object = Any, how: Comparison = Comparison()
) -> float:
    """A score in ``[0, 1]``: how well ``predicted`` matches ``gold`` for a field of type ``annotation``."""
    total, count = _leaves(predicted, typed_gold(gold, annotation), annotation, how)
    return total / count if count else 1.0


def _leaves(pred: object, gold: object, annotation: object, how: Comparison) -> tuple[float, int]:
    """(sum of leaf scores, number of leaves) for a gold value; scalars and lists are one leaf."""
    base = _base(annotation)
    if gold is None or pred is None:
        return (1.0 if gold is None and pred is None else 0.0), 1
    hints = _record_hints(base, gold)
    if hints is not None:
        return _record_leaves(pred, gold, hints, how)
    origin = origin_of(base)
    collections = (list, tuple, set, frozenset)
    if origin in collections or (base is Any and isinstance(gold, collections)):
        item = _item_type(base, origin)
        return _f1(pred, gold, item, how, as_set=origin in (set, frozenset)), 1
    return (1.0 if _same(pred, gold, base, how) else 0.0), 1


def _base(annotation: object) -> object:
    base, _ = strip_annotated(annotation)
    base, _ = split_optional(base)
    return base


def _record_hints(base: Any, gold: Any) -> dict[str, object] | None:
    """Field annotations when ``gold`` is a record (model, dataclass, TypedDict, dict), else None."""
    if is_model_type(base):
        return {name: f.annotation for name, f in base.model_fields.items()}
    if is_dataclass_type(base) or is_typeddict_type(base):
        declared = dict(getattr(base, "__annotations__", {}))
        return probe("type hints of a gold record", lambda: get_type_hints(base), declared)
    if isinstance(gold, Mapping) and (origin_of(base) in (dict, Mapping) or base in (dict, Any)):
        value_type = args_of(base)[1] if len(args_of(base)) == 2 else Any
        return {key: value_type for key in gold}
    return None


def _get(record: object, name: str) -> object:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def _record_leaves(
    pred: object, gold: object, hints: Mapping[str, object], how: Comparison
) -> tuple[float, int]:
    total, count = 0.0, 0
    names = list(gold.keys()) if isinstance(gold, Mapping) else _field_names(gold, hints)
    for name in names:
        sub_total, sub_count = _leaves(_get(pred, name), _get(gold, name), hints.get(name, Any), how)
        total += sub_total
        count += sub_count
    return total, count


def _field_names(record: object, hints: Mapping[str, object]) -> list[str]:
    if dataclasses.is_dataclass(record):
        return [f.name for f in dataclasses.fields(record)]
    return list(hints)


def _item_type(base: object, origin: object) -> object:
    args = args_of(base)
    if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
        return Any  # a fixed-shape tuple: items of mixed types
    return args[0] if args else Any


def _f1(pred: object, gold: Any, item: object, how: Comparison, *, as_set: bool) -> float:
    if not isinstance(pred, (list, tuple, set, frozenset)):
        return 0.0
    predicted, wanted = list(pred), list(gold)
    if as_set:
        predicted, wanted = _unique(predicted, item, how), _unique(wanted, item, how)
    if not predicted and not wanted:
        return 1.0
    if not predicted or not wanted:
        return 0.0
    remaining = list(wanted)
    matched = 0
    for value in predicted:  # greedy one-to-one matching: equality is not always hashable
        for i, candidate in enumerate(remaining):
            if compare_leaf(value, candidate, item, how):
                matched += 1
                del remaining[i]
                break
    if matched == 0:
        return 0.0
    precision, recall = matched / len(predicted), matched / len(wanted)
    return 2 * precision * recall / (precision + recall)


def _unique(values: list[object], item: object, how: Comparison) -> list[object]:
    out: list[Any] = []
    for value in values:
        if not any(compare_leaf(value, seen, item, how) for seen in out):
            out.append(value)
    return out


def compare_leaf(pred: object, gold: object, annotation: object, how: Comparison) -> bool:
    """Whether one item matches exactly (a nested record or list must match as a whole)."""
    total, count = _leaves(pred, gold, annotation, how)
    return count > 0 and total == count


def _same(pred: object, gold: object, base: object, how: Comparison) -> bool:
    if isinstance(gold, float) or (base is float and isinstance(gold, int) and not isinstance(gold, bool)):
        if isinstance(pred, bool) or not isinstance(pred, (int, float)):
            return False
        if how.float_tolerance is not None:
            return abs(pred - gold) <= how.float_tolerance
        return math.isclose(pred, gold, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(gold, str) and isinstance(pred, str) and not isinstance(gold, Enum):
        left, right = pred.strip(), gold.strip()
        return left == right if how.case_sensitive else left.casefold() == right.casefold()
    if isinstance(gold, bool) != isinstance(pred, bool):
        return False  # True == 1 in Python; a bool never matches a number here
    return probe("prediction == gold", lambda: bool(pred == gold), False)
