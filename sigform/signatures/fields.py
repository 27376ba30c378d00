"""Field declarations: what users write (``InputField(...)``) and what signatures store (``FieldSpec``)."""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal

from sigform.errors import SignatureError

__all__ = ["CONSTRAINT_NAMES", "FieldDecl", "FieldKind", "FieldSpec", "InputField", "OutputField"]

FieldKind = Literal["input", "output"]

# pydantic Field() keywords that constrain a value; they are shown to the LM and enforced on parse.
CONSTRAINT_NAMES = frozenset(
    {
        "gt",
        "ge",
        "lt",
        "le",
        "multiple_of",
        "min_length",
        "max_length",
        "pattern",
        "allow_inf_nan",
        "max_digits",
        "decimal_places",
        "strict",
    }
)


@dataclass(frozen=True)
class FieldDecl:
    """What ``InputField()`` / ``OutputField()`` return: a field's kind, description and constraints.

    It carries no name or type; the signature supplies those from the annotation it is assigned to.
    """

    kind: FieldKind
    desc: str = ""
    constraints: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def _declare(kind: FieldKind, desc: str, constraints: Mapping[str, object]) -> FieldDecl:
    unknown = sorted(set(constraints) - CONSTRAINT_NAMES)
    if unknown:
        raise SignatureError(
            f"unknown field option(s) {', '.join(map(repr, unknown))} for {kind.title()}Field; "
            f"allowed: desc and the constraints {', '.join(sorted(CONSTRAINT_NAMES))}"
        )
    if not isinstance(desc, str):
        raise SignatureError(f"{kind.title()}Field desc must be a string, got {type(desc).__name__}")
    return FieldDecl(kind=kind, desc=desc, constraints=MappingProxyType(dict(constraints)))


def InputField(desc: str = "", **constraints: object) -> Any:
    """Declare an input field. ``constraints`` are pydantic's (``ge``, ``max_length``, ``pattern``, ...)."""
    return _declare("input", desc, constraints)


def OutputField(desc: str = "", *, init: Literal[False] = False, **constraints: object) -> Any:
    """Declare an output field. Constraints are shown to the LM and enforced when parsing its answer.

    ``init=False`` is for type checkers: an output is never an argument of the signature's
    constructor (``Answer(question=...)`` holds a call's inputs)."""
    if init is not False:
        raise SignatureError("OutputField(init=...) can only be False: outputs are filled by a program")
    return _declare("output", desc, constraints)


@dataclass(frozen=True, eq=False)
class FieldSpec:
    """One field of a signature: name, kind, type, description and constraints.

    ``annotation`` is the declared type; ``validation_annotation`` is the same type with the
    constraints attached (``Annotated[int, Ge(0)]``), which is what values are validated against.
    Equality is by content, so signatures built different ways compare equal.
    """

    name: str
    kind: FieldKind
    annotation: Any
    desc: str = ""
    constraints: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        _check_name(self.name)
        object.__setattr__(self, "constraints", MappingProxyType(dict(self.constraints)))
        object.__setattr__(self, "_validation_annotation", _with_constraints(self))

    @property
    def validation_annotation(self) -> Any:
        """The annotation with constraints attached, ready for validation."""
        return self._validation_annotation  # type: ignore[attr-defined]

    @property
    def is_input(self) -> bool:
        return self.kind == "input"

    @property
    def is_output(self) -> bool:
        return self.kind == "output"

    def replace(self, **changes: object) -> FieldSpec:
        """A copy with some attributes changed (fields are immutable)."""
        data = {
            "name": self.name,
            "kind": self.kind,
            "annotation": self.annotation,
            "desc": self.desc,
            "constraints": self.constraints,
        }
        data.update(changes)
        return FieldSpec(**data)

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.kind, self.annotation, self.desc, tuple(sorted(self.constraints.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        try:
            return hash(self._key())
        except TypeError:  # an unhashable constraint value: fall back to the stable parts
            return hash((self.name, self.kind, repr(self.annotation), self.desc))

    def __repr__(self) -> str:
        from sigform.types import type_name

        extra = f", desc={self.desc!r}" if self.desc else ""
        if self.constraints:
            extra += ", " + ", ".join(f"{k}={v!r}" for k, v in self.constraints.items())
        return f"{self.kind.title()}Field({self.name}: {type_name(self.annotation)}{extra})"


def _described_currency(spec: FieldSpec) -> object:
    """``DescribedCurrency`` for a field holding numbers (``Optional``, list items, dict values ...)
    whose description names one currency."""
    from sigform.types.coercion._currency_scope import described_currency_for

    return described_currency_for(spec.annotation, spec.desc)


def _check_name(name: str) -> None:
    # reserved names live with the Signature class; here only what makes a name unusable anywhere
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SignatureError(f"field name {name!r} is not a valid Python identifier")


_NUMERIC = frozenset({"gt", "ge", "lt", "le", "multiple_of", "allow_inf_nan", "max_digits", "decimal_places"})
_ORDERED = frozenset({"gt", "ge", "lt", "le"})
_LENGTH = frozenset({"min_length", "max_length"})


def _constraint_fits(name: str, annotation: object) -> bool:
    """Whether pydantic can apply constraint ``name`` to values of ``annotation``.

    pydantic accepts any constraint on any type when a validator is built and only fails while
    validating a value; we want the mistake reported when the signature is defined.
    """
    import datetime
    import decimal
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _constraint_fits(name, typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return all(_constraint_fits(name, a) for a in members)
    base = origin or annotation
    if name == "strict":
        return True
    if name == "pattern":
        return base is str
    if name in _LENGTH:
        return isinstance(base, type) and issubclass(base, (str, bytes, list, tuple, set, frozenset, dict))
    if name in _NUMERIC:
        numbers = (int, float, decimal.Decimal)
        if isinstance(base, type) and issubclass(base, bool):
            return False
        if isinstance(base, type) and issubclass(base, numbers):
            return True
        return (
            name in _ORDERED and isinstance(base, type) and issubclass(base, (datetime.date, datetime.time))
        )
    return False


def _with_constraints(spec: FieldSpec) -> object:
    annotation = spec.annotation
    described = _described_currency(spec)
    if described is not None:  # read by the number parser: a mark of another currency is an error
        annotation = Annotated[annotation, described]
    if not spec.constraints:
        return annotation
    from pydantic import Field, TypeAdapter

    misfits = [name for name in spec.constraints if not _constraint_fits(name, spec.annotation)]
    if misfits:
        raise SignatureError(
            f"field `{spec.name}`: constraint(s) {', '.join(misfits)} "
            f"do not apply to its type {spec.annotation!r}"
        )
    try:
        metadata = Field(**spec.constraints).metadata
        params = (annotation, *metadata)  # as a name: mypy reads `X[(a, *b)]` as 3.11-only syntax
        # Any: an Annotated special form built at run time, which pydantic 2.14's TypeForm rejects
        constrained: Any = Annotated[params] if metadata else annotation
        TypeAdapter(constrained)
    except Exception as exc:  # pydantic raises several types here; report them uniformly
        raise SignatureError(
            f"field `{spec.name}`: constraints {dict(spec.constraints)} "
            f"are invalid for {spec.annotation!r}: {exc}"
        ) from exc
    return constrained
