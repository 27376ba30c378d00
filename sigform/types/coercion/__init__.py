"""Coercing LM text (or an already-parsed JSON value) to a Python annotation.

``coerce("1,048,576", int)`` -> ``1048576``; ``coerce("Decision: escalate", Literal[...])``
-> ``"escalate"``; ``coerce("- a\\n- b", list[str])`` -> ``["a", "b"]``. A value is recovered
only when the text has exactly one sensible reading; otherwise a
:class:`~sigform.errors.FieldValueError` says which field, which type, what was seen and why.
Nothing else ever escapes :func:`coerce`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from sigform.errors import FieldError, FieldValueError
from sigform.excerpt import shorten
from sigform.probes import probe
from sigform.types.coercion._plan import Invalid, adapter_for, plan_for
from sigform.types.coercion._text import key_norm
from sigform.types.coercion._union import pydantic_message
from sigform.types.names import type_name
from sigform.types.unicode_text import lone_surrogate

__all__ = ["FieldCoercer", "coerce", "coerce_fields", "field_error", "key_norm"]

# tests flip this to surface internal bugs instead of wrapping them as parse errors
_RERAISE_INTERNAL = False


def coerce(value: object, annotation: object, *, field: str = "value") -> Any:
    """Return ``value`` (LM text or a parsed JSON value) as a valid value of ``annotation``.

    ``field`` names the field in errors and drives field-name rules (``$`` only on ``*_usd``
    fields, ``%`` only on ``*_percent`` fields). Constraints in ``Annotated[T, Field(...)]``
    are enforced. Raises :class:`~sigform.errors.FieldValueError` (one ``FieldError``) and
    nothing else.
    """
    try:
        return _coerce(value, annotation, field)
    except FieldValueError:
        raise
    except Exception as exc:
        raise FieldValueError(
            f"could not read field `{field}`", errors=[field_error(field, annotation, value, exc)]
        ) from None


def _coerce(value: object, annotation: object, field: str) -> object:
    node = plan_for(annotation)
    out = node.convert(value, field, True)
    if node.needs_validation:
        adapter = adapter_for(annotation)
        if adapter is not None:
            out = adapter.validate_python(out)
    _refuse_lone_surrogate(out)
    return out


def _refuse_lone_surrogate(out: object) -> None:
    """An answer holding text that is not valid Unicode is damaged, as an input with one is
    refused: never passed on (it fails later, far away, when written as UTF-8)."""
    where = lone_surrogate(out)
    if where is not None:
        raise Invalid(
            f"the value holds a lone surrogate ({where}), which is not valid Unicode: the answer is "
            "damaged (a cut-off emoji escape?); ask again"
        )


def field_error(field: str, annotation: object, value: object, exc: BaseException) -> FieldError:
    """The :class:`FieldError` describing ``exc`` raised while reading ``value`` for ``field``."""
    if isinstance(exc, Invalid):
        where = exc.where()
        message = f"{where}: {exc.message}" if where else exc.message
    elif isinstance(exc, ValidationError):
        message = pydantic_message(exc)
    elif isinstance(exc, RecursionError):
        message = "the value is nested too deeply to read"
    else:
        if _RERAISE_INTERNAL:
            raise exc
        message = f"the value could not be read ({type(exc).__name__}: {shorten(str(exc), 80)})"
    expected = _safe_name(annotation)
    # a pathological value (repr too deep): name its type only
    seen = probe("excerpt of a value", lambda: shorten(value), f"<{type(value).__name__}>")
    return FieldError(field=field, expected=expected, seen=seen, message=message)


def coerce_fields(values: Mapping[str, object], annotations: Mapping[str, object]) -> dict[str, Any]:
    """Coerce several fields; raise ONE :class:`FieldValueError` listing every failing field.

    ``values`` and ``annotations`` are keyed by field name; a field missing from ``values`` is
    reported as missing. The result follows the order of ``annotations``.
    """
    out: dict[str, object] = {}
    errors: list[FieldError] = []
    for name, annotation in annotations.items():
        if name not in values:
            errors.append(
                FieldError(
                    field=name,
                    expected=_safe_name(annotation),
                    seen="(nothing)",
                    message="the field is missing",
                )
            )
            continue
        try:
            out[name] = _coerce(values[name], annotation, name)
        except Exception as exc:
            errors.append(field_error(name, annotation, values[name], exc))
    if errors:
        plural = "s" if len(errors) > 1 else ""
        raise FieldValueError(f"could not read {len(errors)} field{plural}", errors=errors)
    return out


class FieldCoercer:
    """:func:`coerce_fields` for one fixed set of fields, each field's converter looked up once
    (adapters keep one per signature). Calling it gives exactly what ``coerce_fields`` gives."""

    __slots__ = ("_steps", "annotations")

    def __init__(self, annotations: Mapping[str, object]) -> None:
        self.annotations = dict(annotations)
        steps = []
        for name, annotation in self.annotations.items():
            node = plan_for(annotation)
            adapter = adapter_for(annotation) if node.needs_validation else None
            steps.append((name, node.convert, adapter))
        self._steps = tuple(steps)

    def try_convert(self, values: Mapping[str, object]) -> dict[str, Any] | None:
        """The coerced values, or ``None`` when a field is missing or fails (no error built)."""
        out: dict[str, object] = {}
        try:
            for name, convert, adapter in self._steps:
                value = convert(values[name], name, True)
                out[name] = value if adapter is None else adapter.validate_python(value)
                _refuse_lone_surrogate(out[name])
        except Exception:
            return None
        return out

    def __call__(self, values: Mapping[str, object]) -> dict[str, Any]:
        out = self.try_convert(values)
        return coerce_fields(values, self.annotations) if out is None else out


def _safe_name(annotation: object) -> str:
    return probe("type name", lambda: type_name(annotation), repr(annotation))
