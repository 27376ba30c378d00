"""The ``Signature`` class: what goes into a program and what comes out.

A signature is a class (``class Answer(sf.Signature)``) whose annotated attributes are declared
with ``InputField()`` / ``OutputField()`` and whose docstring is the instructions. Signatures are
immutable values: every manipulation (``append``, ``delete``, ``with_instructions``, ...) returns
a new class, and two signatures with the same fields and instructions are equal and hash alike,
however they were built (class, string or dict).
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType, MethodType
from typing import TYPE_CHECKING, Any, ClassVar, Optional, cast

from sigform.errors import InputError, SignatureError
from sigform.signatures.fields import FieldDecl, FieldSpec, InputField, OutputField
from sigform.signatures.parsing import parse_signature_string
from sigform.signatures.prediction import Prediction

if TYPE_CHECKING:
    from sigform.signatures.state import SignatureState

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10
    from typing_extensions import dataclass_transform

__all__ = ["RESERVED_FIELD_NAMES", "DynamicSignature", "Signature", "SignatureMeta", "make_signature"]

# Names a field may not take: the class API below, pydantic internals, the chat "completed"
# marker, and the few attribute names programs' Prediction/Example objects keep for themselves.
RESERVED_FIELD_NAMES = frozenset(
    {
        "instructions",
        "input_fields",
        "output_fields",
        "fields",
        "signature",
        "with_instructions",
        "with_updated_field",
        "append",
        "prepend",
        "insert",
        "delete",
        "dump_state",
        "load_state",
        "from_state",
        "equals",
        "completed",
        "completions",
        "from_candidates",
        "with_inputs",
        "to_dict",
        "copy",
        "lm",
        "demos",
        "config",
        "adapter",  # per-call keyword arguments of programs (Predict)
        "schema",
        "json",
        "dict",
        "validate",
        "construct",
        "mro",
    }
)


def _check_reserved(name: str) -> None:
    if name.startswith("_"):
        raise SignatureError(f"field name {name!r} may not start with an underscore (reserved for internals)")
    if name.startswith("model_"):
        raise SignatureError(f"field name {name!r} may not start with 'model_' (reserved by pydantic)")
    if name in RESERVED_FIELD_NAMES:
        raise SignatureError(f"field name {name!r} is reserved: it collides with the signature/program API")


def _default_instructions(inputs: list[str], outputs: list[str]) -> str:
    ins = ", ".join(f"`{n}`" for n in inputs)
    outs = ", ".join(f"`{n}`" for n in outputs)
    return f"Given the fields {ins}, produce the fields {outs}." if ins else f"Produce the fields {outs}."


def _validate_fields(specs: list[FieldSpec], owner: str) -> None:
    seen: dict[str, str] = {}
    for spec in specs:
        _check_reserved(spec.name)
        if spec.name in seen:
            if seen[spec.name] != spec.kind:
                raise SignatureError(f"{owner}: field `{spec.name}` is both an input and an output")
            raise SignatureError(f"{owner}: field `{spec.name}` is declared twice")
        seen[spec.name] = spec.kind
    if not any(s.kind == "output" for s in specs):
        raise SignatureError(f"{owner}: a signature needs at least one output field")


# Type checkers read a signature class as a keyword-only dataclass of its fields: instances have
# the fields' declared types, and the constructor takes the inputs (OutputField is declared with
# init=False), so ``Answer(question=...)`` and a program's typed call check input names and types.
@dataclass_transform(kw_only_default=True, field_specifiers=(InputField, OutputField))
class SignatureMeta(type):
    """Collects fields at class creation and gives signature classes value semantics."""

    _fields: Mapping[str, FieldSpec]
    _explicit_instructions: str | None

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kw: object
    ) -> SignatureMeta:
        prebuilt: list[FieldSpec] | None = namespace.pop("__sigform_fields__", None)
        explicit = namespace.pop("__sigform_instructions__", None)
        is_base = namespace.pop("__sigform_base__", False)  # Signature, DynamicSignature: no fields
        declared = {k: v for k, v in namespace.items() if isinstance(v, FieldDecl)}
        for key in declared:  # fields live in _fields, never as class attributes that shadow the API
            del namespace[key]
        cls = super().__new__(mcs, name, bases, namespace, **kw)
        if prebuilt is None:
            prebuilt = _collect_class_fields(cls, namespace, declared)
            doc = namespace.get("__doc__")
            explicit = None if is_base else inspect.cleandoc(doc) if doc else _inherited_instructions(bases)
        if not is_base:  # every class but the bases must be valid
            _validate_fields(prebuilt, name)
        cls._fields = MappingProxyType({s.name: s for s in prebuilt})
        cls._explicit_instructions = explicit
        return cls

    # ---- read access -------------------------------------------------------------------------
    @property
    def fields(cls) -> Mapping[str, FieldSpec]:
        """All fields in declaration order."""
        return cls._fields

    @property
    def input_fields(cls) -> Mapping[str, FieldSpec]:
        return MappingProxyType({k: f for k, f in cls._fields.items() if f.kind == "input"})

    @property
    def output_fields(cls) -> Mapping[str, FieldSpec]:
        return MappingProxyType({k: f for k, f in cls._fields.items() if f.kind == "output"})

    @property
    def instructions(cls) -> str:
        """The docstring / explicit instructions, or default ones generated from the current fields."""
        if cls._explicit_instructions:
            return cls._explicit_instructions
        return _default_instructions(list(cls.input_fields), list(cls.output_fields))

    @property
    def has_explicit_instructions(cls) -> bool:
        return bool(cls._explicit_instructions)

    @property
    def signature(cls) -> str:
        """The compact string form, e.g. ``"question -> answer: int"`` (types shown when not str)."""
        from sigform.types import type_name

        def side(fields: Mapping[str, FieldSpec]) -> str:
            return ", ".join(
                n if f.annotation is str else f"{n}: {type_name(f.annotation)}" for n, f in fields.items()
            )

        return f"{side(cls.input_fields)} -> {side(cls.output_fields)}"

    # ---- value semantics -----------------------------------------------------------------------
    def _identity(cls) -> tuple[object, ...]:
        return (cls.instructions, tuple(cls._fields.values()))

    def __eq__(cls, other: object) -> bool:
        if not isinstance(other, SignatureMeta):
            return NotImplemented
        if cls is other:
            return True
        return cls._identity() == other._identity()

    def __hash__(cls) -> int:
        return hash(cls._identity())

    @property
    def _repr_html_(cls) -> Callable[[], str]:
        """The signature as a table in notebooks. A property of the metaclass, so that it wins over
        the instances' ``_repr_html_`` (a prediction's) and IPython gets the bound method it wants
        for a class."""
        from sigform.html_view import signature_html

        return MethodType(signature_html, cls)

    def __repr__(cls) -> str:
        if not cls._fields:
            return f"<signature base {cls.__name__}>"
        return f"{cls.__name__}({cls.signature!r}, instructions={cls.instructions!r})"

    # ---- immutable manipulation -----------------------------------------------------------------
    def _derive(
        cls, specs: list[FieldSpec], instructions: str | type[_Keep] | None = None
    ) -> type[DynamicSignature]:
        explicit = cls._explicit_instructions if instructions is _Keep else cast(Optional[str], instructions)
        return _build(cls.__name__, specs, explicit, base=cls)

    def with_instructions(cls, instructions: str) -> type[DynamicSignature]:
        """A copy with new explicit instructions."""
        if not isinstance(instructions, str) or not instructions.strip():
            raise SignatureError("instructions must be a non-empty string")
        return cls._derive(list(cls._fields.values()), instructions)

    def with_updated_field(cls, name: str, **changes: object) -> type[DynamicSignature]:
        """A copy where field ``name`` has new ``desc`` / ``annotation`` / ``constraints``."""
        if name not in cls._fields:
            raise SignatureError(f"{cls.__name__} has no field `{name}` to update")
        allowed = {"desc", "annotation", "constraints"}
        if set(changes) - allowed:
            raise SignatureError(f"with_updated_field accepts only {sorted(allowed)}, got {sorted(changes)}")
        specs = [s.replace(**changes) if s.name == name else s for s in cls._fields.values()]
        return cls._derive(specs, _Keep)

    def insert(
        cls, index: int, name: str, field: FieldDecl, annotation: object = str
    ) -> type[DynamicSignature]:
        """A copy with a field inserted at ``index`` among the fields of its kind (inputs or outputs).

        Negative indexes count from the end; ``-1`` appends.
        """
        if not isinstance(field, FieldDecl):
            raise SignatureError(f"insert expects InputField(...) or OutputField(...), got {field!r}")
        spec = FieldSpec(name, field.kind, annotation, field.desc, field.constraints)
        inputs = [s for s in cls._fields.values() if s.kind == "input"]
        outputs = [s for s in cls._fields.values() if s.kind == "output"]
        group = inputs if field.kind == "input" else outputs
        position = len(group) + 1 + index if index < 0 else index
        if not 0 <= position <= len(group):
            raise SignatureError(f"index {index} is out of range for {len(group)} {field.kind} field(s)")
        group.insert(position, spec)
        return cls._derive(inputs + outputs, _Keep)

    def append(cls, name: str, field: FieldDecl, annotation: object = str) -> type[DynamicSignature]:
        """A copy with a field added after the others of its kind."""
        return cls.insert(-1, name, field, annotation)

    def prepend(cls, name: str, field: FieldDecl, annotation: object = str) -> type[DynamicSignature]:
        """A copy with a field added before the others of its kind."""
        return cls.insert(0, name, field, annotation)

    def delete(cls, name: str) -> type[DynamicSignature]:
        """A copy without field ``name`` (an error if there is no such field)."""
        if name not in cls._fields:
            raise SignatureError(f"{cls.__name__} has no field `{name}` to delete")
        return cls._derive([s for s in cls._fields.values() if s.name != name], _Keep)

    def equals(cls, other: object) -> bool:
        """Content equality, same as ``==``."""
        return bool(cls == other)

    # ---- state ----------------------------------------------------------------------------------
    def dump_state(cls) -> SignatureState:
        """JSON-ready state: instructions and, per field, name, kind, type string, desc, constraints."""
        from sigform.signatures.state import dump_state

        return dump_state(cls)

    def load_state(cls, state: Mapping[str, object]) -> type[DynamicSignature]:
        """A copy with instructions, descriptions and constraints from ``state``, matched by field name."""
        from sigform.signatures.state import load_state

        return load_state(cls, state)


class _Keep:
    """Sentinel: keep the current explicit instructions."""


def _inherited_instructions(bases: tuple[type, ...]) -> str | None:
    for base in bases:
        if isinstance(base, SignatureMeta) and base._explicit_instructions:
            return base._explicit_instructions
    return None


def _resolve_annotations(cls: type, namespace: dict[str, Any]) -> dict[str, object]:
    raw = namespace.get("__annotations__", {})
    if not raw and "__annotate__" in namespace:  # Python 3.14 lazy annotations
        raw = inspect.get_annotations(cls)
    module = sys.modules.get(cls.__module__)
    globalns = dict(vars(module)) if module else {}
    resolved: dict[str, object] = {}
    for key, value in raw.items():
        if isinstance(value, str):  # `from __future__ import annotations` in the defining module
            try:
                value = typing._eval_type(typing.ForwardRef(value), globalns, dict(vars(cls)))  # type: ignore[attr-defined]
            except Exception as exc:
                raise SignatureError(f"{cls.__name__}.{key}: cannot resolve type {value!r}: {exc}") from exc
        resolved[key] = value
    return resolved


def _collect_class_fields(
    cls: type, namespace: dict[str, object], declared: dict[str, FieldDecl]
) -> list[FieldSpec]:
    inherited: list[FieldSpec] = []
    for base in reversed(cls.__mro__[1:]):
        if isinstance(base, SignatureMeta):
            for spec in base._fields.values():
                inherited = [s for s in inherited if s.name != spec.name] + [spec]
    annotations = _resolve_annotations(cls, namespace)
    for key, value in annotations.items():
        if typing.get_origin(value) is ClassVar:
            continue
        if key not in declared:
            raise SignatureError(
                f"{cls.__name__}.{key} is annotated but not declared: write "
                f"`{key}: ... = sf.InputField()` or `= sf.OutputField()`"
            )
    order = list(annotations) + [k for k in declared if k not in annotations]
    own = [
        FieldSpec(
            key, declared[key].kind, annotations.get(key, str), declared[key].desc, declared[key].constraints
        )
        for key in order
        if key in declared
    ]
    own_names = {s.name for s in own}
    return [s for s in inherited if s.name not in own_names] + own


def _build(
    name: str, specs: list[FieldSpec], instructions: str | None, base: type | None = None
) -> type[DynamicSignature]:
    parent = DynamicSignature
    namespace = {
        "__sigform_fields__": list(specs),
        "__sigform_instructions__": instructions,
        "__doc__": instructions,
        "__module__": base.__module__ if base is not None else __name__,
        "__qualname__": name,
    }
    return SignatureMeta(name, (parent,), namespace)  # type: ignore[return-value]


class Signature(Prediction, metaclass=SignatureMeta):
    """Base class of all signatures. Subclass it; see the module docstring.

    Read access: ``Sig.input_fields``, ``Sig.output_fields``, ``Sig.fields`` (ordered mappings of
    name -> :class:`FieldSpec`), ``Sig.instructions``, ``Sig.signature`` (string form).

    An instance is a :class:`Prediction` typed by the class: a program built from ``Answer``
    returns ``Answer`` instances (``pred.answer`` has the declared type for type checkers), and
    ``Answer(question="...")`` holds the inputs of one call, ``program(Answer(question="..."))``.
    """

    __slots__ = ()
    __sigform_base__ = True

    if TYPE_CHECKING:
        # fields are read as declared attributes: a misspelled one is a type error (at run time
        # Prediction.__getattr__ still reads the values)
        __getattr__: ClassVar[None]  # type: ignore[assignment, misc]

    def __init__(self, **inputs: object) -> None:
        cls = type(self)
        if not cls._fields:
            raise TypeError("Signature is a base class: subclass it, or use sf.make_signature(...)")
        names = list(cls.input_fields)
        unknown = [name for name in inputs if name not in names]
        if unknown:
            import difflib

            output = unknown[0] in cls.output_fields
            # an output's name is no typo of itself: only inputs are suggested for it
            candidates = names if output else [*names, *cls.output_fields]
            close = difflib.get_close_matches(unknown[0], candidates, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            kind = "an output: a program fills it" if output else "not an input"
            raise InputError(
                f"{cls.__name__}: `{unknown[0]}` is {kind}{hint}; "
                f"inputs are {', '.join(f'`{n}`' for n in names) or '(none)'}"
            )
        super().__init__(inputs)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # pickled with its class when the class can be imported, else as a plain Prediction (a
        # signature declared in a function, or built at run time)
        if _importable(type(self)):
            return super().__reduce_ex__(protocol)
        return (Prediction._make, (dict(self._store), self._meta, self._completions))


def _importable(cls: type) -> bool:
    found: object = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


class DynamicSignature(Signature):
    """The base of signatures built at run time: from a string or a dict (:func:`make_signature`),
    a saved state, or a copy changed by ``append``, ``with_instructions``, ... Their fields are not
    known to a type checker, so its values are read as ``Any`` and any input name is accepted."""

    __slots__ = ()
    __sigform_base__ = True

    if TYPE_CHECKING:

        def __init__(self, **inputs: object) -> None: ...

        def __getattr__(self, name: str) -> Any:  # type: ignore[override]
            raise NotImplementedError


_FieldsArg = Mapping[str, Any] | str


def make_signature(
    fields: _FieldsArg,
    instructions: str | None = None,
    *,
    types: Mapping[str, object] | None = None,
    name: str = "StringSignature",
) -> type[DynamicSignature]:
    """Build a signature from a string or a dict.

    ``make_signature("question, context: list[str] -> answer: int")`` or
    ``make_signature({"question": (str, InputField()), "answer": (int, OutputField())})``.
    Types in strings resolve from builtins, ``typing``, sigform's types (``Image``, ``History``,
    ...) and ``types`` — never from the caller's variables. Both forms give equal signatures.
    """
    specs: list[FieldSpec]
    if isinstance(fields, str):
        from sigform.signatures.namespace import signature_namespace

        namespace = {**signature_namespace(fields), **(types or {})}
        inputs, outputs = parse_signature_string(fields, namespace)
        specs = [FieldSpec(n, "input", a) for n, a in inputs] + [
            FieldSpec(n, "output", a) for n, a in outputs
        ]
    elif isinstance(fields, Mapping):
        specs = []
        for key, value in fields.items():
            if isinstance(value, FieldDecl):
                annotation, decl = str, value
            elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], FieldDecl):
                annotation, decl = value
            elif isinstance(value, FieldSpec):
                specs.append(value if value.name == key else value.replace(name=key))
                continue
            else:
                raise SignatureError(
                    f"field `{key}` must be given as (type, InputField()/OutputField()), got {value!r}"
                )
            specs.append(FieldSpec(key, decl.kind, annotation, decl.desc, decl.constraints))
    else:
        raise SignatureError(
            f"make_signature expects a string or a dict of fields, got {type(fields).__name__}"
        )
    if instructions is not None and (not isinstance(instructions, str) or not instructions.strip()):
        raise SignatureError("instructions must be a non-empty string or None")
    _validate_fields(specs, name)
    return _build(name, specs, inspect.cleandoc(instructions) if instructions else None)
