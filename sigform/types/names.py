"""Readable type names and their safe inverse.

``type_name(list[Book])`` -> ``"list[Book]"`` is what prompts, errors and saved signatures
show. ``resolve_type_name("list[Book]", {"Book": Book})`` turns such a string back into an
annotation *without eval*: the text is parsed with :mod:`ast` and only names from a fixed
table (builtins, ``typing``, ``datetime``) or from the caller's namespace are resolved.
"""

from __future__ import annotations

import ast
import datetime as _dt
import decimal
import enum
import typing
import uuid
from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

from sigform.errors import SignatureError
from sigform.types.inspection import NoneType, args_of, origin_of, strip_annotated

__all__ = ["SPECIAL_TYPE_NAMES", "resolve_type_name", "type_name"]

# sigform's own types a string signature may name without ``types=`` (see sigform.signatures)
SPECIAL_TYPE_NAMES = ("Image", "Audio", "File", "History", "Reasoning", "ToolCalls")

_BUILTIN_NAMES: dict[str, object] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "bytes": bytes,
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "object": object,
    "None": None,
    "NoneType": NoneType,
    "Any": typing.Any,
    "Optional": Optional,
    "Union": Union,
    "Literal": Literal,
    "List": typing.List,  # noqa: UP006 - accepted in type strings
    "Dict": typing.Dict,  # noqa: UP006
    "Tuple": typing.Tuple,  # noqa: UP006
    "Set": typing.Set,  # noqa: UP006
    "FrozenSet": typing.FrozenSet,  # noqa: UP006
    "date": _dt.date,
    "datetime": _dt.datetime,
    "time": _dt.time,
    "timedelta": _dt.timedelta,
    "Decimal": decimal.Decimal,
    "UUID": uuid.UUID,
}
_MODULES: dict[str, dict[str, object]] = {
    "typing": {k: v for k, v in _BUILTIN_NAMES.items() if getattr(v, "__module__", "") == "typing"},
    "datetime": {"date": _dt.date, "datetime": _dt.datetime, "time": _dt.time, "timedelta": _dt.timedelta},
}
_BUILTIN_BY_OBJECT = {id(v): k for k, v in _BUILTIN_NAMES.items() if isinstance(v, type)}


def type_name(annotation: object) -> str:
    """A short readable name: ``"list[Book]"``, ``"Literal['a', 'b']"``, ``"Optional[int]"``.

    ``Annotated`` metadata is left out (constraints are described separately); the result can be
    read back by :func:`resolve_type_name` given a namespace holding the user's classes.
    """
    annotation, _ = strip_annotated(annotation)
    if annotation is None or annotation is NoneType:
        return "None"
    if annotation is typing.Any:
        return "Any"
    origin = origin_of(annotation)
    if origin is None:
        if isinstance(annotation, type):
            return _BUILTIN_BY_OBJECT.get(id(annotation), annotation.__name__)
        if isinstance(annotation, str):  # a forward reference written as a string
            return annotation
        if isinstance(annotation, typing.ForwardRef):
            return annotation.__forward_arg__
        return getattr(annotation, "__name__", None) or repr(annotation)
    args = args_of(annotation)
    if origin is Literal:
        return f"Literal[{', '.join(_literal_repr(a) for a in args)}]"
    if origin is Union:
        members = [a for a in args if a is not NoneType]
        if len(members) == 1 and len(args) == 2:
            return f"Optional[{type_name(members[0])}]"
        return f"Union[{', '.join(type_name(a) for a in args)}]"
    base = _BUILTIN_BY_OBJECT.get(id(origin)) or getattr(origin, "__name__", None) or repr(origin)
    if not args:
        return base
    parts = ["..." if a is Ellipsis else type_name(a) for a in args]
    return f"{base}[{', '.join(parts)}]"


def _literal_repr(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def resolve_type_name(text: str, namespace: Mapping[str, object] | None = None) -> Any:
    """Parse a type string such as ``"list[Book]"`` or ``"int | None"`` into an annotation.

    Safe: nothing is evaluated. Names resolve from ``namespace`` first, then builtins, typing
    and datetime names; any other name raises :class:`~sigform.errors.SignatureError` naming it.
    """
    ns = namespace or {}
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise SignatureError(
            f"cannot read the type {text!r}: {exc.msg if isinstance(exc, SyntaxError) else exc}"
        ) from exc
    return _Resolver(ns, text).visit(tree.body)


def _unknown_name_hint(name: str, namespace: Mapping[str, object]) -> str:
    """A did-you-mean for a misspelt type name (your ``types=`` first), or how to pass a custom type."""
    known = [*_BUILTIN_NAMES, *SPECIAL_TYPE_NAMES, *(f"datetime.{n}" for n in _MODULES["datetime"])]
    for group in (list(namespace), known):
        close = _closest(name, group)
        if close is not None:
            return f"; did you mean {close!r}?"
    if name[:1].isupper():
        return (
            f"; a type of your own is passed by name: types={{{name!r}: {name}}} "
            "(string signatures never look names up in your variables)"
        )
    return ""


def _closest(name: str, candidates: list[str]) -> str | None:
    import difflib

    by_lower: dict[str, str] = {}
    for k in sorted(candidates, key=lambda k: (k != k.lower(), k)):  # `list` before `List`
        by_lower.setdefault(k.lower(), k)
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[matches[0]] if matches else None


class _Resolver:
    def __init__(self, namespace: Mapping[str, object], text: str) -> None:
        self.ns = namespace
        self.text = text

    def fail(self, what: str, hint: str = "") -> SignatureError:
        return SignatureError(f"{what} in the type {self.text!r}{hint}")

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Constant):
            if node.value is None:
                return None
            if isinstance(node.value, str):  # quoted forward reference: "list['Book']"
                return resolve_type_name(node.value, self.ns)
            if node.value is Ellipsis:
                return Ellipsis
            raise self.fail(f"unexpected constant {node.value!r}")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return Union[self.visit(node.left), self.visit(node.right)]
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        raise self.fail(f"unsupported syntax {type(node).__name__}")

    def name(self, name: str) -> object:
        if name in self.ns:
            return self.ns[name]
        if name in _BUILTIN_NAMES:
            return _BUILTIN_NAMES[name]
        raise self.fail(f"unknown type name {name!r}", _unknown_name_hint(name, self.ns))

    def attribute(self, node: ast.Attribute) -> object:
        if node.attr.startswith("_"):
            raise self.fail(f"private attribute {node.attr!r}")
        if isinstance(node.value, ast.Name) and node.value.id not in self.ns and node.value.id in _MODULES:
            table = _MODULES[node.value.id]
            if node.attr in table:
                return table[node.attr]
            raise self.fail(f"unknown type name {node.value.id}.{node.attr}")
        base = self.visit(node.value)
        try:
            return getattr(base, node.attr)
        except AttributeError as exc:
            raise self.fail(f"unknown type name {ast.unparse(node)!r}") from exc

    def subscript(self, node: ast.Subscript) -> object:
        base = self.visit(node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base is Literal:
            return Literal[tuple(self.literal(e) for e in elts)]
        args = tuple(self.visit(e) for e in elts)
        if base is Optional:
            if len(args) != 1:
                raise self.fail("Optional takes exactly one type")
            return Optional[args[0]]
        try:
            return base[args if len(args) != 1 else args[0]]
        except TypeError as exc:
            raise self.fail(f"{ast.unparse(node.value)!r} cannot be subscripted ({exc})") from exc

    def literal(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant) and isinstance(
            node.value, (str, int, float, bool, bytes, type(None))
        ):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))
            and not isinstance(node.operand.value, bool)
        ):
            return -node.operand.value
        if isinstance(node, ast.Attribute):  # Literal[Color.RED]
            return self.attribute(node)
        raise self.fail(f"unsupported Literal value {ast.unparse(node)}")
