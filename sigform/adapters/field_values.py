"""Typed output values from the raw values an extraction found, or the error naming every field.

A field given twice with different values, a value the extraction flagged (cut off, ambiguous)
or a missing field is a :class:`StructureError` (the answer format was not followed); a field
found whose value does not validate is a :class:`FieldValueError`. Both list every failing field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sigform.adapters.extraction import Extracted
from sigform.adapters.fields import FieldView
from sigform.errors import FieldError, FieldValueError, StructureError
from sigform.excerpt import shorten
from sigform.types import coerce_fields

__all__ = ["typed_outputs"]

Summary = Callable[[Extracted, Sequence[FieldView], Sequence[FieldView]], str]


def typed_outputs(found: Extracted, views: Sequence[FieldView], summary: Summary) -> dict[str, Any]:
    """The output values of ``views`` read from ``found``, in the views' order; ``summary``
    writes the headline of a structural error from what was found, missing and expected."""
    structural: list[FieldError] = []
    for name, seen in found.conflicts.items():
        view = next(v for v in views if v.name == name)
        structural.append(
            FieldError(
                name,
                view.type_name,
                " | ".join(shorten(s, 80) for s in seen),
                "the field is given more than once with different values",
            )
        )
    for name, problem in found.problems.items():
        view = next(v for v in views if v.name == name)
        structural.append(FieldError(name, view.type_name, shorten(found.values.get(name), 80), problem))
    bad = {e.field for e in structural}
    present = {v.name: found.values[v.name] for v in views if v.name in found.values and v.name not in bad}
    annotations = {v.name: v.validation_annotation for v in views if v.name in present}
    errors: list[FieldError] = []
    values: dict[str, object] = {}
    try:
        values = coerce_fields(present, annotations)
    except FieldValueError as exc:
        errors = list(exc.errors)
    missing = [v for v in views if v.name not in found.values and v.name not in bad]
    if missing or structural:
        for view in missing:
            structural.append(FieldError(view.name, view.type_name, "(nothing)", "the field is missing"))
        raise StructureError(summary(found, missing, views), errors=structural + errors)
    if errors:
        raise FieldValueError(f"{len(errors)} field value(s) do not validate", errors=errors)
    return {v.name: values[v.name] for v in views}
