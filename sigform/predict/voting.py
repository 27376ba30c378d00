"""``majority``: the most common answer among several predictions (self-consistency)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sigform.signatures.prediction import Completions, Prediction, Record

__all__ = ["majority", "normalize_text"]

_SPACE = re.compile(r"\s+")


def normalize_text(value: object) -> Any:
    """The default vote key: strings case-folded with whitespace collapsed and trailing
    punctuation dropped (``"Paris."`` and ``" paris"`` vote together); other values as is."""
    if isinstance(value, str):
        return _SPACE.sub(" ", value).strip().rstrip(".!").casefold()
    return value


def _key(value: object) -> object:
    try:
        hash(value)
        return value
    except TypeError:  # lists, dicts, models: vote on a canonical JSON form
        from pydantic_core import to_jsonable_python

        return json.dumps(to_jsonable_python(value), sort_keys=True, default=repr)


def _candidates(predictions: Prediction | Completions | Iterable[object]) -> list[Any]:
    if isinstance(predictions, Prediction):
        return list(predictions.completions)
    if isinstance(predictions, (Record, Mapping)):
        return [predictions]
    items: list[object] = []
    for item in predictions:
        # a Prediction with several candidates contributes all of them
        items.extend(item.completions if isinstance(item, Prediction) else [item])
    return items


def majority(
    predictions: Prediction | Completions | Iterable[Prediction | Mapping[str, object]],
    field: str | None = None,
    *,
    normalize: Callable[[Any], object] | None = normalize_text,
) -> Prediction:
    """The prediction whose ``field`` value is the most common among ``predictions``.

    ``predictions`` may be a list of predictions (or dicts), a prediction made with ``n > 1``
    (its completions vote) or a ``Completions``. ``field`` defaults to the last output field.
    Values are compared after ``normalize`` (see :func:`normalize_text`; None compares exactly).
    Predictions whose value normalises to ``None`` do not vote. A tie goes to the value seen
    first. The winner is returned as it was (not normalised).
    """
    items = _candidates(predictions)
    if not items:
        raise ValueError("majority() needs at least one prediction")
    if field is None:
        first = items[0]
        keys = list(first) if isinstance(first, (Record, Mapping)) else []
        if not keys:
            raise ValueError("majority(): the first prediction has no fields; pass field=...")
        field = keys[-1]
    counts: Counter[object] = Counter()
    first_seen: dict[object, Any] = {}
    for item in items:
        if field not in item:
            raise KeyError(f"majority(): a prediction has no field {field!r}: {item!r}")
        value = item[field]
        key = normalize(value) if normalize else value
        if key is None:
            continue
        key = _key(key)
        counts[key] += 1
        first_seen.setdefault(key, item)
    if not counts:
        raise ValueError(f"majority(): no prediction has a value for {field!r}")
    top = max(counts.values())
    winner_key = next(k for k in first_seen if counts[k] == top)  # first seen among the tied
    winner = first_seen[winner_key]
    if isinstance(winner, Prediction):
        return winner.copy()
    return Prediction(winner.to_dict() if isinstance(winner, Record) else dict(winner))
