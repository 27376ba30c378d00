"""Label-leak checks: an example whose inputs are among a program's demos (or its nearest-
neighbour pool) has its answer in the prompt, so scoring on it inflates the score.

Examples are matched by their input values (canonical JSON), restricted to the input names a
predictor's signature declares.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["LabelLeakWarning", "fingerprint", "overlap", "program_leaks"]


class LabelLeakWarning(UserWarning):
    """Examples used to choose or show demos are also being scored."""


def fingerprint(values: Mapping[str, object] | Any, names: Iterable[str] | None = None) -> str:
    """A canonical text of ``values`` -- a mapping or an Example -- (only ``names`` when given) for
    exact-match lookups."""
    from pydantic_core import to_jsonable_python

    keys = sorted(values if names is None else (n for n in names if n in values))
    picked = {k: to_jsonable_python(values[k], fallback=repr) for k in keys}
    return json.dumps(picked, sort_keys=True, ensure_ascii=False)


def _input_names(example: object) -> list[str] | None:
    keys = getattr(example, "_input_keys", None)
    return list(keys) if keys is not None else None


def overlap(first: Sequence[object], second: Sequence[object]) -> int:
    """How many examples of ``second`` have the same inputs as an example of ``first`` (examples
    without marked inputs are compared on every value)."""
    seen = {fingerprint(_values(ex), _input_names(ex)) for ex in first}
    return sum(fingerprint(_values(ex), _input_names(ex)) in seen for ex in second)


def _values(example: Any) -> Mapping[str, Any]:
    store = getattr(example, "_store", None)
    return store if store is not None else dict(example)


def warn_overlap(first: Sequence[object], second: Sequence[object], first_name: str, second_name: str) -> int:
    """Warn (:class:`LabelLeakWarning`) when the two sets share examples; returns the count."""
    shared = overlap(first, second)
    if shared:
        warnings.warn(
            f"{shared} of {len(second)} {second_name} examples also appear in the {first_name} "
            f"(same inputs): scores on them are not held out. Split the data so that no example is in both.",
            LabelLeakWarning,
            stacklevel=3,
        )
    return shared


def demo_pool(predictor: Any) -> list[object]:
    """The demos a predictor can show: its fixed demos plus a demo selector's pool."""
    pool = list(predictor.demos)
    selector = getattr(predictor, "demo_selector", None)
    if selector is not None:
        pool.extend(selector.pool)
    return pool


def program_leaks(program: Any, inputs: Sequence[Mapping[str, Any]]) -> int:
    """How many of these input dicts are the inputs of a demo of some predictor of ``program``."""
    predictors = program.predictors() if callable(getattr(program, "predictors", None)) else []
    leaked: set[int] = set()
    for predictor in predictors:
        pool = demo_pool(predictor)
        if not pool:
            continue
        names = list(predictor.signature.input_fields)
        known = {fingerprint(_values(demo), names) for demo in pool}
        for i, values in enumerate(inputs):
            if all(n in values for n in names) and fingerprint(values, names) in known:
                leaked.add(i)
    return len(leaked)
