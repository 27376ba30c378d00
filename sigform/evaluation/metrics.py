"""Metrics: the typed default (:class:`TypedMatch`) and how any callable metric is run.

A metric is any callable ``metric(example, prediction) -> bool | float``. ``TypedMatch`` scores
each labelled field by its declared type (see :mod:`sigform.evaluation.matching`) and averages
them (``require_all=True``: 1 only when every field matches). Field types come from the
program's signature(s); a field no signature declares is compared by its gold value's type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sigform.errors import MetricValueError
from sigform.evaluation.matching import Comparison, compare

__all__ = ["Metric", "MetricValueError", "TypedMatch", "field_types", "metric_name", "metric_score"]

Metric = Callable[[Any, Any], Any]


class TypedMatch:
    """The default metric: per-field typed comparison of the prediction with the example's labels.

    Args:
        fields: the label fields to score (default: every label of the example).
        float_tolerance: absolute tolerance for float fields (default: equal up to rounding).
        case_sensitive: compare text exactly (default) or ignoring case.
        require_all: score 1 only when every field matches fully (default: the mean field score).
        types: field annotations to use (default: from the program's signatures, set by
            :func:`sigform.evaluate`).
    """

    def __init__(
        self,
        fields: Iterable[str] | None = None,
        *,
        float_tolerance: float | None = None,
        case_sensitive: bool = True,
        require_all: bool = False,
        types: Mapping[str, object] | None = None,
    ) -> None:
        self.fields = tuple(fields) if fields is not None else None
        self.how = Comparison(float_tolerance=float_tolerance, case_sensitive=case_sensitive)
        self.require_all = require_all
        self.types: dict[str, Any] = dict(types or {})

    def with_types(self, types: Mapping[str, object]) -> TypedMatch:
        """A copy that knows these field annotations (explicit ones win)."""
        new = TypedMatch(
            self.fields,
            float_tolerance=self.how.float_tolerance,
            case_sensitive=self.how.case_sensitive,
            require_all=self.require_all,
        )
        new.types = {**types, **self.types}
        return new

    def label_names(self, example: object) -> list[str]:
        names = self.fields if self.fields is not None else tuple(_labels(example))
        return list(names)

    def field_scores(self, example: Any, prediction: object) -> dict[str, float]:
        """``{field: score in [0, 1]}`` for every scored label of ``example``."""
        scores = {}
        for name in self.label_names(example):
            gold = example[name]
            predicted = _read(prediction, name)
            scores[name] = compare(predicted, gold, self.types.get(name, Any), self.how)
        return scores

    def __call__(self, example: object, prediction: object) -> float:
        scores = self.field_scores(example, prediction)
        if not scores:
            return 1.0
        if self.require_all:
            return 1.0 if all(s == 1.0 for s in scores.values()) else 0.0
        return sum(scores.values()) / len(scores)

    def __repr__(self) -> str:
        parts = []
        if self.fields is not None:
            parts.append(f"fields={list(self.fields)!r}")
        if self.how.float_tolerance is not None:
            parts.append(f"float_tolerance={self.how.float_tolerance!r}")
        if not self.how.case_sensitive:
            parts.append("case_sensitive=False")
        if self.require_all:
            parts.append("require_all=True")
        return f"TypedMatch({', '.join(parts)})"


def _read(prediction: Any, name: str) -> object:
    if isinstance(prediction, Mapping):
        return prediction.get(name)
    try:
        return prediction[name]
    except (KeyError, TypeError, IndexError):
        return getattr(prediction, name, None)


def _labels(example: Any) -> Iterable[str]:
    keys = getattr(example, "_input_keys", None)
    inputs = set(keys or ())
    return [k for k in example if k not in inputs]


def field_types(program: Any) -> dict[str, Any]:
    """Output and input field annotations declared by the program's predictors (last one wins:
    a module's final step usually produces its answer)."""
    types: dict[str, object] = {}
    signature = getattr(program, "signature", None)
    predictors = program.predictors() if callable(getattr(program, "predictors", None)) else []
    signatures = [p.signature for p in predictors]
    if signature is not None and signature not in signatures:
        signatures.append(signature)
    for sig in signatures:
        for name, spec in getattr(sig, "fields", {}).items():
            types[name] = spec.annotation
    return types


def metric_name(metric: object) -> str:
    if isinstance(metric, TypedMatch):
        return repr(metric)
    return getattr(metric, "__qualname__", None) or getattr(metric, "__name__", None) or type(metric).__name__


def metric_score(metric: Metric, example: object, prediction: object) -> float:
    """Call ``metric`` and check its answer: a bool or a finite number (bools count as 0/1)."""
    value = metric(example, prediction)
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        value = value.item()  # numpy scalars (np.bool_, np.float64) as Python values
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    raise MetricValueError(
        f"metric {metric_name(metric)} returned {value!r} ({type(value).__name__}); "
        "a metric must return a bool or a finite number"
    )
