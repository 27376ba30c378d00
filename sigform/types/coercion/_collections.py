"""Collection nodes: list/set/frozenset/variadic tuple, fixed tuple, dict.

Besides JSON, text collections are read the way people write them: bullet or numbered lines,
plain lines, comma-separated values, a bare scalar (a one-element list) and, for dicts,
``key: value`` lines. Every item then goes through the item type's own node, so one bad item
fails the whole value (with its index in the error).
"""

from __future__ import annotations

import itertools
import re
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import regex

from sigform.types.coercion._currency_scope import value_namer
from sigform.types.coercion._jsontext import parse_json
from sigform.types.coercion._numbers import CURRENCY_MARK
from sigform.types.coercion._plan import Invalid, Node, plan_for
from sigform.types.coercion._scalars import FloatNode, IntNode, StrNode, describe_seen
from sigform.types.coercion._text import (
    NO_VALUE_WORDS,
    NULL_WORDS,
    WRAPPER_KEYS,
    key_norm,
    strip_fence,
    unwrap_quotes,
)

__all__ = ["DictNode", "SeqNode", "TupleNode", "iter_items", "split_items"]

_MARKER = re.compile(r"\A(?:[-*\u2022+]|\d{1,3}[.)]|\(\d{1,3}\))\s+(.*)\Z", re.S)
# lettered items, a) b) c) / (a) (b) / a. b.: only read as markers when they run a, b, c, ...
_LETTER = re.compile(r"\A(?:\(([A-Za-z])\)|([A-Za-z])[.)])\s+(.*)\Z", re.S)
_KEY_SEP = re.compile(r"[:=]")
_THOUSANDS = regex.compile(
    r"[-+]?" + CURRENCY_MARK + r"?\s*+[-+]?\d{1,3}(?:,\d{3})++(?:\.\d++)?%?(?:\s*+" + CURRENCY_MARK + ")?"
)


_LINE_TEXT = re.compile(r"\S[^\n]*")  # from a line's first non-blank character to its end


def _lines(text: str) -> Iterator[str]:
    """The non-blank lines of ``text``, read lazily: a reader that fails at its first bad line
    never splits the rest (1 MB of lines was split and matched whole before the first item)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for m in _LINE_TEXT.finditer(text):
        yield text[text.rfind("\n", 0, m.start()) + 1 : m.end()]


def split_items(text: str, numeric: bool) -> list[str]:
    """Split free text into item texts; raises :class:`Invalid` when there is no single reading."""
    return list(iter_items(text, numeric))


def iter_items(text: str, numeric: bool) -> Iterator[str]:
    """The item texts of free text, one at a time (a bad item ends the reading before the rest
    is split); raises :class:`Invalid` when there is no single reading.

    Bullet or numbered lines, plain lines (or ``a)`` ``b)`` lettered ones), or one line of
    comma / semicolon separated values. A list whose lines are not all marked or all plain
    mixes items and other text (an intro line ending in ``:`` before marked lines excepted)."""
    lines = _lines(text)
    head = list(itertools.islice(lines, 27))  # lettered lists run a) to z): at most 26 lines
    if not head:
        raise Invalid("the value is empty")
    first = _MARKER.match(head[0].strip())
    if len(head) == 1 and not first:
        yield from _one_line_items(head[0].strip(), numeric)
        return
    if not first and head[0].rstrip().endswith(":") and _MARKER.match(head[1].strip()):
        head = head[1:]  # "The symptoms are:" intro line
        first = _MARKER.match(head[0].strip())
    rest = itertools.chain(head, lines)
    if first:
        for line in rest:
            m = _MARKER.match(line.strip())
            if m is None:
                raise Invalid("the list mixes items and other text")
            yield m.group(1).strip()
        return
    lettered = _lettered(head) if len(head) <= 26 else None
    if lettered is not None and not any(_MARKER.match(line.strip()) for line in head):
        yield from lettered
        return
    for line in rest:
        if _MARKER.match(line.strip()):
            raise Invalid("the list mixes items and other text")
        yield line.strip()


def _one_line_items(line: str, numeric: bool) -> list[str]:
    if numeric:
        if _THOUSANDS.fullmatch(line):
            raise Invalid(f"{line!r} is ambiguous: one number with a thousands separator, or a list?")
        parts = re.split(r",\s+", line) if ", " in line else line.split(",")
    elif "," in line:
        parts = line.split(",")
    elif ";" in line:
        parts = line.split(";")
    else:
        return [line]
    items = [p.strip() for p in parts]
    if items and not items[-1]:
        items.pop()  # "a, b," trailing separator
    if any(not item for item in items):
        raise Invalid("the list has an empty item")
    return items


def _lettered(lines: list[str]) -> list[str] | None:
    """Items of ``a) x`` / ``(b) y`` / ``c. z`` lines lettered in order from a (or A), else None."""
    if len(lines) < 2:
        return None
    items: list[str] = []
    for i, line in enumerate(lines):
        m = _LETTER.match(line.strip())
        letter = (m.group(1) or m.group(2)) if m else ""
        if not m or i >= 26 or letter.lower() != "abcdefghijklmnopqrstuvwxyz"[i]:
            return None
        if letter.isupper() != lines[0].strip().lstrip("(")[:1].isupper():
            return None
        items.append(m.group(3).strip())
    return items


# a YAML-style list item holding a record: `- title: Dune` (bullet or number, then `key:`)
_RECORD_ITEM = re.compile(r"\A([ \t]*)(?:[-*\u2022+]|\d{1,3}[.)])[ \t]+(?=[A-Za-z_][\w \-]{0,60}:)")


def _record_items(text: str) -> list[str] | None:
    """The ``key: value`` texts of a YAML-style list of records, else None.

    Every item starts at the same indentation with a marker and a ``key:``; its other lines are
    indented deeper and are dedented together (nested structure keeps its relative indent).
    """
    lines = list(_lines(text))
    first = _RECORD_ITEM.match(lines[0])
    if first is None:
        return None
    base = first.group(1)
    items: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _RECORD_ITEM.match(line)
        if m is not None and m.group(1) == base:
            items.append((line[m.end() :], []))
        elif line.startswith(base) and line[len(base) : len(base) + 1] in (" ", "\t"):
            items[-1][1].append(line)
        else:
            return None  # a line outside the items: not one list of records
    return [head + ("\n" + textwrap.dedent("\n".join(rest)) if rest else "") for head, rest in items]


def _convert_item(node: Node, value: object, name: str, text: bool) -> object:
    """An item (or dict value) of a collection read from text: a bare ``null`` / ``None`` is no
    value, as JSON's null is; an Optional item reads it as None (its own rule), text refuses it
    (``- null`` was read as the string ``'null'``)."""
    if text and isinstance(node, StrNode) and isinstance(value, str) and value.strip().lower() in NULL_WORDS:
        raise Invalid(f"{value.strip()!r} is no value: expected text (Optional[str] items may be missing)")
    return node.convert(value, name, text)


def _key_line(line: str) -> tuple[str, str] | None:
    """``(key, value)`` of a ``key: value`` or ``key = value`` line (after an optional bullet),
    split at the first ``:`` or ``=`` past the key's first character; else None."""
    if line[:1] in ("-", "*", "\u2022", "+") and line[1:2].isspace():
        start = len(line) - len(line[1:].lstrip())  # the key starts after the bullet's blanks
        found = _split_key(line, start)
        if found is None and start > 2 and line[start : start + 1] in (":", "="):
            found = (line[start - 1 : start], line[start + 1 :])  # a blank key: `-  : x`
        if found is not None:
            return found
    return _split_key(line, 0)


def _key_pair(line: str) -> tuple[str, str]:
    """``(key, value)`` of a dict's ``key: value`` line, else :class:`Invalid`."""
    m = _key_line(line.strip())
    if m is None:
        raise Invalid(f"expected `key: value` lines; cannot read {line.strip()[:40]!r}")
    return unwrap_quotes(m[0].strip().strip("*").strip()), m[1].strip()


def _split_key(line: str, start: int) -> tuple[str, str] | None:
    m = _KEY_SEP.search(line, start + 1)
    return None if m is None else (line[start : m.start()], line[m.end() :])


class SeqNode(Node):
    """list, set, frozenset, Sequence or ``tuple[X, ...]`` of one item type."""

    def __init__(self, annotation: object, item: object, build: type) -> None:
        super().__init__(annotation)
        self.item_annotation = item
        self.build = build
        self.item: Node | None = None

    def item_node(self) -> Node:
        if self.item is None:
            self.item = plan_for(self.item_annotation)
        return self.item

    @property
    def needs_validation(self) -> bool:  # type: ignore[override]
        return self.item_node().needs_validation

    def convert(self, value: object, name: str, text: bool) -> object:
        item = self.item_node()
        if isinstance(value, str):
            s = strip_fence(value.strip())
            if s[:1] == "[" or (s[:1] == "{" and s[-1:] == "}"):
                return self.convert(parse_json(s), name, False)
            if not s:
                raise Invalid("the value is empty")
            if unwrap_quotes(s).rstrip(".").lower() in NO_VALUE_WORDS:
                # `null` / `N/A` says there is no list, not a list holding that word; Optional[list]
                # reads these as None, and `[]` is the empty list
                raise Invalid(f"{s[:20]!r} is not a list (write [] for an empty list)")
            if getattr(item, "is_record", False):
                records = _record_items(s)
                if records is None:
                    raise Invalid("expected a JSON list of objects")
                return self._items(records, item, name, True)
            numeric = isinstance(item, (IntNode, FloatNode))
            return self._items(iter_items(s, numeric), item, name, True)
        if isinstance(value, (list, tuple, set, frozenset)):
            return self._items(value, item, name, False)
        if isinstance(value, dict):
            if len(value) == 1:
                ((key, inner),) = value.items()
                if (
                    isinstance(inner, list)
                    and isinstance(key, str)
                    and (
                        key_norm(key) in WRAPPER_KEYS
                        or key_norm(key) == key_norm(name)
                        or key_norm(key) == "items"
                    )
                ):
                    return self._items(inner, item, name, False)
            if getattr(item, "is_record", False):
                return self._items([value], item, name, False)
        raise Invalid(f"expected a list, got {describe_seen(value)}")

    def _items(self, values: Any, item: Node, name: str, text: bool) -> object:
        out = []
        for i, v in enumerate(values):
            try:
                out.append(_convert_item(item, v, name, text))
            except Invalid as exc:
                raise exc.at(i) from None
        try:
            return out if self.build is list else self.build(out)
        except TypeError:
            raise Invalid("the items cannot be collected into a set (unhashable)") from None

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, (list, tuple, set, frozenset)):
            return 2.0
        if isinstance(value, str) and value.strip()[:1] == "[":
            return 1.0
        return 0.0


class TupleNode(Node):
    """``tuple[A, B, C]``: exactly that many items, each read by its own type."""

    def __init__(self, annotation: object, items: tuple[object, ...]) -> None:
        super().__init__(annotation)
        self.item_annotations = items
        self.items: list[Node] | None = None

    def item_nodes(self) -> list[Node]:
        if self.items is None:
            self.items = [plan_for(a) for a in self.item_annotations]
        return self.items

    @property
    def needs_validation(self) -> bool:  # type: ignore[override]
        return any(n.needs_validation for n in self.item_nodes())

    def convert(self, value: object, name: str, text: bool) -> object:
        nodes = self.item_nodes()
        as_text = False
        if isinstance(value, str):
            s = strip_fence(value.strip())
            if s[:1] == "[":
                value = parse_json(s)
            elif s[:1] == "(" and s[-1:] == ")":  # a Python-style tuple: (1, 2)
                value, as_text = (
                    split_items(s[1:-1], all(isinstance(n, (IntNode, FloatNode)) for n in nodes)),
                    True,
                )
            else:
                numeric = all(isinstance(n, (IntNode, FloatNode)) for n in nodes)
                value, as_text = split_items(s, numeric), True
        if not isinstance(value, (list, tuple)):
            raise Invalid(f"expected a list of {len(nodes)} items, got {describe_seen(value)}")
        if len(value) != len(nodes):
            raise Invalid(f"expected exactly {len(nodes)} items, got {len(value)}")
        out = []
        for i, (node, v) in enumerate(zip(nodes, value, strict=True)):
            try:
                out.append(_convert_item(node, v, name, as_text))
            except Invalid as exc:
                raise exc.at(i) from None
        return tuple(out)

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, (list, tuple)) and len(value) == len(self.item_annotations):
            return 2.0
        return 0.0


class DictNode(Node):
    """``dict[K, V]``: a JSON object, ``key: value`` lines, or ``[{"key": k, "value": v}, ...]``
    (the strict structured-output form of an open dict)."""

    def __init__(self, annotation: object, key: object, value: object) -> None:
        super().__init__(annotation)
        self.key_annotation = key
        self.value_annotation = value
        self.nodes: tuple[Node, Node] | None = None

    def kv_nodes(self) -> tuple[Node, Node]:
        if self.nodes is None:
            self.nodes = (plan_for(self.key_annotation), plan_for(self.value_annotation))
        return self.nodes

    @property
    def needs_validation(self) -> bool:  # type: ignore[override]
        k, v = self.kv_nodes()
        return k.needs_validation or v.needs_validation

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, str):
            s = strip_fence(value.strip())
            if s[:1] in ("{", "["):
                return self.convert(parse_json(s), name, False)
            return self._pairs(self._lines(s), name, True)
        if isinstance(value, dict):
            try:
                return self._pairs(list(value.items()), name, False)
            except Invalid:
                if len(value) == 1:
                    ((key, inner),) = value.items()
                    if (
                        isinstance(inner, dict)
                        and isinstance(key, str)
                        and (key_norm(key) in WRAPPER_KEYS or key_norm(key) == key_norm(name))
                    ):
                        return self._pairs(list(inner.items()), name, False)
                raise
        if isinstance(value, list):
            if all(isinstance(v, dict) and set(v) == {"key", "value"} for v in value):
                return self._pairs([(v["key"], v["value"]) for v in value], name, False)
            if len(value) == 1 and isinstance(value[0], dict):
                return self.convert(value[0], name, False)
        raise Invalid(f"expected an object, got {describe_seen(value)}")

    def _lines(self, text: str) -> Iterator[tuple[str, str]]:
        """The ``(key, value)`` texts of ``key: value`` lines, one at a time (the first bad line
        ends the reading). Past the first 64 lines each distinct line is read once: a line
        repeated word for word is one pair given twice (200,000 copies of `k: 1` took 0.7 s,
        one Python step each); the first 64 come again then, the same pairs given twice."""
        if not text:
            raise Invalid("the value is empty")
        lines = _lines(text)
        yield from map(_key_pair, itertools.islice(lines, 64))
        if next(lines, None) is not None:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            yield from map(_key_pair, _lines("\n".join(dict.fromkeys(text.split("\n")))))

    def _pairs(self, pairs: Iterable[tuple[object, object]], name: str, text: bool) -> dict[object, object]:
        knode, vnode = self.kv_nodes()
        value_name = value_namer(name)
        out: dict[object, object] = {}
        for k, v in pairs:
            try:
                key = knode.convert(k, name, text)
            except Invalid as exc:
                raise exc.at(f"key {k!r}") from None
            try:
                val = _convert_item(vnode, v, value_name(key) if isinstance(key, str) else name, text)
            except Invalid as exc:
                raise exc.at(str(k)) from None
            try:
                if key in out and out[key] != val:
                    raise Invalid(f"key {k!r} is given twice with different values")
                out[key] = val
            except TypeError:
                raise Invalid(f"key {k!r} is not hashable") from None
        return out

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, dict):
            return 1.0
        if isinstance(value, str) and value.strip()[:1] == "{":
            return 0.5
        return 0.0
