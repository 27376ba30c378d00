"""Small, fast questions about annotations: is it optional, a model, a Literal, ...

Everything in ``sigform.types`` asks these questions, and so do the adapters (this module is
public: ``from sigform.types.inspection import split_optional``); keeping them in one place
means the special cases of ``typing`` (``Annotated``, ``Optional``, ``X | Y``, ``Required``,
``List``) are handled once.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types as _stdtypes
import typing
from typing import Annotated, Any, Literal, Union

import typing_extensions
from pydantic import BaseModel

__all__ = [
    "NoneType",
    "args_of",
    "cache_key",
    "is_dataclass_type",
    "is_enum_type",
    "is_model_type",
    "is_typeddict_type",
    "is_union",
    "literal_values",
    "origin_of",
    "split_optional",
    "strip_annotated",
]

NoneType = type(None)

_UNION_ORIGINS: tuple[object, ...] = (Union, _stdtypes.UnionType) if sys.version_info >= (3, 10) else (Union,)
_LITERAL_ORIGINS = (Literal, typing_extensions.Literal)
_WRAPPER_ORIGINS = tuple(
    {
        getattr(typing, "Required", None),
        getattr(typing, "NotRequired", None),
        getattr(typing, "ReadOnly", None),
        typing_extensions.Required,
        typing_extensions.NotRequired,
        getattr(typing_extensions, "ReadOnly", None),
    }
    - {None}
)


def strip_annotated(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """Return ``(base, metadata)`` for ``Annotated[base, *metadata]`` (nested ones merged)."""
    metadata: tuple[object, ...] = ()
    while True:
        if typing.get_origin(annotation) is Annotated:
            metadata = tuple(annotation.__metadata__) + metadata
            annotation = annotation.__origin__
        elif typing.get_origin(annotation) in _WRAPPER_ORIGINS:
            annotation = typing.get_args(annotation)[0]
        else:
            return annotation, metadata


def origin_of(annotation: object) -> Any:
    """``typing.get_origin`` with ``X | Y`` reported as ``Union``."""
    origin = typing.get_origin(annotation)
    if origin in _UNION_ORIGINS:
        return Union
    if origin in _LITERAL_ORIGINS:
        return Literal
    return origin


def args_of(annotation: object) -> tuple[Any, ...]:
    """``typing.get_args``."""
    return typing.get_args(annotation)


def is_union(annotation: object) -> bool:
    """True for ``Union[...]``, ``Optional[...]`` and ``X | Y``."""
    return typing.get_origin(annotation) in _UNION_ORIGINS


def split_optional(annotation: object) -> tuple[Any, bool]:
    """Return ``(annotation without None, allows_none)``; ``Optional[int]`` -> ``(int, True)``."""
    if not is_union(annotation):
        return annotation, annotation is None or annotation is NoneType
    members = [a for a in typing.get_args(annotation) if a is not NoneType and a is not None]
    allows_none = len(members) != len(typing.get_args(annotation))
    if not allows_none:
        return annotation, False
    if len(members) == 1:
        return members[0], True
    return Union[tuple(members)], True


def literal_values(annotation: object) -> tuple[Any, ...]:
    """The allowed values of a (possibly nested) ``Literal``."""
    out: list[object] = []
    for arg in typing.get_args(annotation):
        if origin_of(arg) is Literal:
            out.extend(literal_values(arg))
        else:
            out.append(arg)
    return tuple(out)


def is_model_type(annotation: object) -> bool:
    """True for a pydantic ``BaseModel`` subclass."""
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def is_dataclass_type(annotation: object) -> bool:
    """True for a dataclass class (stdlib or pydantic dataclass), not an instance."""
    return isinstance(annotation, type) and dataclasses.is_dataclass(annotation)


def is_typeddict_type(annotation: object) -> bool:
    """True for a ``TypedDict`` class (typing or typing_extensions)."""
    return typing_extensions.is_typeddict(annotation)


def is_enum_type(annotation: object) -> bool:
    """True for an ``Enum`` subclass."""
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def cache_key(annotation: object) -> Any:
    """A dict key for ``annotation``; unhashable annotations are keyed by identity.

    Identity keys are only safe while the annotation lives, so callers that use them must keep
    a reference to the annotation next to the cached value (they all do).
    """
    try:
        hash(annotation)
    except TypeError:
        return ("__id__", id(annotation))
    return annotation
