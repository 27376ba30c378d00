"""Record nodes: pydantic models, dataclasses and TypedDicts.

A record is read from a JSON object (possibly a JSON string, inside prose or a fence, or in a
one-key wrapper / one-item list) or from YAML-style ``field: value`` lines. Keys are matched
to fields exactly, then ignoring case, spaces, hyphens and underscores; unknown keys are
dropped (kept when a model allows extras). Each field value goes through its own node; the
result is a plain dict that pydantic turns into the record (defaults, validators,
constraints).
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
import typing
from typing import Any

from sigform.probes import probe
from sigform.types.coercion._currency_scope import with_described_currency
from sigform.types.coercion._jsontext import parse_json
from sigform.types.coercion._plan import Invalid, Node, accepts_none, plan_for
from sigform.types.coercion._scalars import describe_seen
from sigform.types.coercion._text import key_norm, strip_fence
from sigform.types.inspection import is_model_type, is_typeddict_type

__all__ = ["RecordNode"]

_KEY_WORDS = re.compile(r"[A-Za-z_][\w \-]{0,60}")
# one-key objects (`{"vehicle": {...}}`, `answer: {...}`) and JSON strings unwrapped around one
# record: each layer read from text re-reads all of it, so a run of `answer: ` labels cost a
# pass per label (1 MB: ~500 passes, 1.3 s) before this bound
_MAX_WRAPPERS = 4


def yaml_key(line: str) -> tuple[str, str] | None:
    """``(key, value)`` of a stripped ``key: value`` line, else None.

    The key may follow a bullet (``-``, ``*``, ``•``) and be bold (``**key**:``,
    ``**key:**``); the colon is the first one and is followed by a blank or the end
    (``url: http://x`` has key ``url``; ``http://x`` has none). String scans only, so the cost
    is linear in the line (a regex over blank runs around the optional ``**`` was quadratic).
    """
    cut = line.find(":")
    if cut < 0:
        return None
    head, rest = line[:cut], line[cut + 1 :]
    key = None
    if head[:1] in ("-", "*", "•") and head[1:2].isspace():
        key = _bold_key(head[1:].lstrip())
    if key is None:
        key = _bold_key(head)
    if key is None:
        return None
    rest = rest[2:] if rest.startswith("**") else rest
    if rest and not rest[0].isspace():
        return None
    rest = rest.lstrip()
    return key, rest[2:].lstrip() if rest.startswith("**") else rest


def _bold_key(head: str) -> str | None:
    key = head.lstrip("*").lstrip().rstrip()
    key = key[:-2].rstrip() if key.endswith("**") else key
    return key if _KEY_WORDS.fullmatch(key) else None


@dataclasses.dataclass
class _Field:
    key: str  # the key pydantic validates (alias or name)
    name: str  # the attribute name (number rules look at it)
    annotation: Any
    required: bool
    node: Node | None = None


def _record_fields(cls: Any) -> tuple[list[_Field], bool]:
    """The fields of a record class and whether it keeps unknown keys."""
    if is_model_type(cls):
        out = []
        for name, f in cls.model_fields.items():
            key = f.validation_alias if isinstance(f.validation_alias, str) else (f.alias or name)
            # constraints in f.metadata are enforced when pydantic validates the whole model
            # a number field described as "in EUR" refuses "$12", as a signature's field does
            named = with_described_currency(name, f.annotation, f.description)
            out.append(_Field(key, named, f.annotation, f.is_required()))
        return out, cls.model_config.get("extra") == "allow"
    # unresolvable forward references: read values as Any, pydantic decides
    hints = probe("type hints of a record type", lambda: typing.get_type_hints(cls, include_extras=True), {})
    if is_typeddict_type(cls):
        required = getattr(cls, "__required_keys__", frozenset(hints))
        return [_Field(n, n, hints[n], _typeddict_required(hints[n], n in required)) for n in hints], False
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        missing = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, f.name, hints.get(f.name, Any), missing))
    return out, False


def _typeddict_required(hint: object, default: bool) -> bool:
    # string annotations hide Required/NotRequired from the class; the resolved hint shows them
    while True:
        origin = typing.get_origin(hint)
        if origin is typing.Annotated:
            hint = typing.get_args(hint)[0]
        elif origin is not None and getattr(origin, "_name", "") in ("Required", "NotRequired"):
            return getattr(origin, "_name", "") == "Required"
        else:
            return default


class RecordNode(Node):
    """A model, dataclass or TypedDict read from an object or ``field: value`` lines."""

    needs_validation = True
    is_record = True

    def __init__(self, annotation: Any) -> None:
        super().__init__(annotation)
        self._fields: list[_Field] | None = None
        self.keeps_extra = False
        self.by_key: dict[str, _Field] = {}
        self.by_norm: dict[str, _Field | None] = {}
        self.instance_type = annotation if not is_typeddict_type(annotation) else None

    def fields(self) -> list[_Field]:
        if self._fields is None:
            fields, self.keeps_extra = _record_fields(self.annotation)
            for f in fields:
                self.by_key[f.key] = f
                self.by_key.setdefault(f.name, f)
                for k in {key_norm(f.key), key_norm(f.name)}:
                    # two fields with the same normal form: only exact keys may reach them
                    self.by_norm[k] = f if self.by_norm.get(k, f) is f else None
            self._fields = fields
        return self._fields

    def lookup(self, key: object) -> _Field | None:
        self.fields()
        if not isinstance(key, str):
            return None
        return self.by_key.get(key) or self.by_norm.get(key_norm(key))

    @property
    def type_label(self) -> str:
        return getattr(self.annotation, "__name__", "object")

    def convert(self, value: object, name: str, text: bool) -> object:
        if self.instance_type is not None and isinstance(value, self.instance_type):
            return value
        if isinstance(value, dict):
            return self._from_dict(value, False, 0)
        if isinstance(value, str):
            return self._from_text(value, 0)
        # the one-element array wrapper of the parse spec: exactly one object, nothing else (a bare
        # string, number or nested list inside is not an object, so it is not read as one)
        if isinstance(value, list) and len(value) == 1:
            item = value[0]
            if isinstance(item, dict) or (
                self.instance_type is not None and isinstance(item, self.instance_type)
            ):
                return self.convert(item, name, False)
            raise Invalid(f"expected an object ({self.type_label}), got a list holding {describe_seen(item)}")
        raise Invalid(f"expected an object ({self.type_label}), got {describe_seen(value)}")

    def _unwrap(self, key: object, wrappers: int) -> int:
        """The wrapper count after one more layer (``key``'s object or a JSON string)."""
        if wrappers >= _MAX_WRAPPERS:
            around = f" (`{key}`)" if isinstance(key, str) else ""
            raise Invalid(
                f"expected an object ({self.type_label}); none of its fields were found, only "
                f"one-key objects or quoted text nested more than {_MAX_WRAPPERS} deep{around}"
            )
        return wrappers + 1

    def _from_text(self, value: str, wrappers: int) -> Any:
        s = strip_fence(value.strip())
        if not s:
            raise Invalid("the value is empty")
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':  # the object written as a JSON string
            try:
                inner = json.loads(s)
            except ValueError:
                inner = None
            if isinstance(inner, str):
                return self._from_text(inner, self._unwrap(None, wrappers))
        if s[0] in "{[":
            return self._from_json(parse_json(s), wrappers)
        start = s.find("{")
        if start > 0:
            first = yaml_key(s.split("\n", 1)[0].strip())
            if first is None or self.lookup(first[0]) is None:
                # prose (or an inner fence) before the JSON object
                end = s.rfind("}")
                return self._from_json(parse_json(s[start : end + 1] if end > start else s[start:]), wrappers)
        return self._from_dict(self._yaml(s), True, wrappers)

    def _from_json(self, value: object, wrappers: int) -> object:
        if isinstance(value, dict):
            return self._from_dict(value, False, wrappers)
        return self.convert(value, "", False)

    def _yaml(self, text: str) -> dict[str, str]:
        first = text.partition("\n")[0].strip()  # ``text`` is stripped: not blank
        if yaml_key(first) is None and not first.endswith(":"):
            raise self._not_yaml(first)  # before the whole text is split into lines
        entries: list[tuple[str, list[str]]] = []
        keys: set[str] = set()
        base: int | None = None
        for raw in text.replace("\r\n", "\n").split("\n"):
            stripped = raw.strip()
            indent = len(raw) - len(raw.lstrip())
            # a line indented past the first key belongs to the entry above: not read as a key
            m = yaml_key(stripped) if stripped and (base is None or indent <= base) else None
            if m:
                if m[0] in keys:  # at once: the rest of a long text is never read
                    raise Invalid(f"field {m[0]!r} is given twice")
                keys.add(m[0])
                base = indent if base is None else base
                entries.append((m[0], [m[1]]))
            elif entries:
                entries[-1][1].append(raw)
            elif stripped and not stripped.endswith(":"):
                raise self._not_yaml(stripped)
        if not entries:
            raise Invalid(f"expected a JSON object or `field: value` lines for {self.type_label}")
        out: dict[str, str] = {}
        for key, lines in entries:
            body = lines[0] + ("\n" + textwrap.dedent("\n".join(lines[1:])) if len(lines) > 1 else "")
            out[key] = body.strip()
        return out

    def _not_yaml(self, line: str) -> Invalid:
        return Invalid(
            f"expected a JSON object or `field: value` lines for {self.type_label}; cannot read {line[:40]!r}"
        )

    def _from_dict(self, data: dict[Any, Any], text: bool, wrappers: int) -> dict[str, object]:
        fields = self.fields()
        if len(data) == 1:  # {"vehicle": {...}}: one key that is not a field, around the object
            ((key, inner),) = data.items()
            if self.lookup(key) is None:
                if isinstance(inner, dict):
                    return self._from_dict(inner, False, self._unwrap(key, wrappers))
                if isinstance(inner, str) and inner.strip():
                    # text parses to JSON or `key: value` lines, never an instance: a field dict
                    unwrapped: dict[str, object] = self._from_text(inner, self._unwrap(key, wrappers))
                    return unwrapped
        out: dict[str, object] = {}
        seen: dict[str, object] = {}
        for key, raw in data.items():
            f = self.lookup(key)
            if f is None:
                if self.keeps_extra and isinstance(key, str):
                    out[key] = raw
                continue
            if f.key in seen and seen[f.key] != raw:
                raise Invalid(f"field {f.name!r} is given twice with different values")
            seen[f.key] = raw
            if f.node is None:
                f.node = plan_for(f.annotation)
            if raw is None and not f.required and not accepts_none(f.node):
                continue  # null for a field with a default (strict outputs send it): use the default
            try:
                out[f.key] = f.node.convert(raw, f.name, text)
            except Invalid as exc:
                raise exc.at(f.name) from None
        missing = [f.name for f in fields if f.required and f.key not in out]
        if missing:
            if not seen:
                raise Invalid(f"expected an object ({self.type_label}); none of its fields were found")
            raise Invalid(f"missing required field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
        return out

    def fit(self, value: object, text: bool) -> float:
        if self.instance_type is not None and isinstance(value, self.instance_type):
            return 3.0
        if isinstance(value, dict):
            fields = self.fields()
            exact_keys = all(isinstance(k, str) and k in self.by_key for k in value)
            if exact_keys and all(f.key in value or not f.required for f in fields):
                return 2.0 + len(value) / max(len(fields), 1)
            return 0.5
        if isinstance(value, str) and value.strip()[:1] == "{":
            return 1.0
        return 0.0
