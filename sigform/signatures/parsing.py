"""Parse string signatures such as ``"question, context: list[str] -> answer: int"``.

Types are resolved from builtins, ``typing``, sigform's own types and an explicit ``types=``
mapping only. The caller's stack frames are never inspected: a library's signature must not
bind to an application's class that happens to share a name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sigform.errors import SignatureError

__all__ = ["parse_signature_string", "split_top_level"]

_OPEN = {"[": "]", "(": ")", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` on ``sep`` outside brackets and quotes (``dict[str, int]`` stays whole)."""
    parts: list[str] = []
    depth: list[str] = []
    quote: str | None = None
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth.append(_OPEN[ch])
        elif ch in _CLOSE:
            if not depth or depth.pop() != ch:
                raise SignatureError(f"unbalanced {ch!r} in signature part {text!r}")
        elif not depth and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    if quote or depth:
        raise SignatureError(f"unclosed bracket or quote in signature part {text!r}")
    parts.append(text[start:])
    return parts


def _parse_side(side: str, namespace: Mapping[str, object], which: str) -> list[tuple[str, object]]:
    from sigform.types import resolve_type_name

    fields: list[tuple[str, object]] = []
    if not side.strip():
        return fields
    for raw in split_top_level(side, ","):
        item = raw.strip()
        if not item:
            raise SignatureError(f"empty field name in the {which} of the signature (a stray comma?)")
        name, colon, type_text = item.partition(":")
        name = name.strip()
        if not name.isidentifier():
            raise SignatureError(f"{name!r} in the {which} of the signature is not a valid field name")
        if colon and not type_text.strip():
            raise SignatureError(f"field `{name}` has a ':' but no type")
        try:
            annotation = resolve_type_name(type_text.strip(), namespace) if colon else str
        except SignatureError as exc:
            raise SignatureError(f"field `{name}`: {exc}") from exc
        fields.append((name, annotation))
    return fields


def parse_signature_string(
    text: str, namespace: Mapping[str, object]
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """Return ``(inputs, outputs)`` as ``[(name, annotation), ...]`` for a string signature."""
    if not isinstance(text, str):
        raise SignatureError(f"a string signature must be a str, got {type(text).__name__}")
    sides = split_top_level(text, "->")
    if len(sides) != 2:
        raise SignatureError(
            f"a string signature needs exactly one '->' between inputs and outputs, got {text!r}"
        )
    return _parse_side(sides[0], namespace, "inputs"), _parse_side(sides[1], namespace, "outputs")
