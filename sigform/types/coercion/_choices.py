"""Choice nodes: ``Literal[...]`` and ``Enum`` classes.

A choice is found in tiers, and a tier only answers when exactly one allowed value matches:
exact value, then case-insensitive, then ignoring spaces/underscores/hyphens. Enums also
match member names (``PLUG_IN_HYBRID``, ``Tier.SILVER``) and, for numeric enums, the value as
text (``"4"``). Positions are never read as members.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from sigform.types.coercion._numbers import INT_TEXT
from sigform.types.coercion._plan import Invalid, Node
from sigform.types.coercion._scalars import _scalar_text, describe_seen, unwrap_single
from sigform.types.coercion._text import split_label, unwrap_quotes

__all__ = ["EnumNode", "LiteralNode"]

_SEP = re.compile(r"[\s_\-]+")
_QUALIFIED = re.compile(r"\A[A-Za-z_]\w*\.([A-Za-z_]\w*)\Z")
# a short label before the choice: "Verdict: approve", "Final answer: B" (the field's own label is
# removed earlier, by clean_scalar); read only when what follows is exactly one allowed value
_ANY_LABEL_WORDS = re.compile(r"[A-Za-z][A-Za-z ]{0,40}")


def _loose(text: str) -> str:
    return _SEP.sub(" ", text.casefold()).strip()


def _same(a: object, b: object) -> bool:
    """Equal and of the same kind: ``True`` is not ``1``, ``1`` is not ``1.0`` for a choice."""
    return type(a) is type(b) and a == b


class _ChoiceNode(Node):
    """Shared matching over ``options``: list of (canonical value, text forms by tier)."""

    choices: tuple[Any, ...]

    def _options(self) -> list[tuple[object, list[str]]]:
        raise NotImplementedError

    def _index(self) -> None:
        # tier tables: text form -> list of canonical values
        self.tiers: list[dict[str, list[Any]]] = [{}, {}, {}]
        # the longest text that can still hold an allowed value: a short label, blanks, the value
        self.max_text = 200 + 4 * max((len(f) for _, forms in self._options() for f in forms), default=0)
        for canonical, forms in self._options():
            for form in forms:
                for tier, key in enumerate((form, form.casefold(), _loose(form))):
                    bucket = self.tiers[tier].setdefault(key, [])
                    if not any(c is canonical for c in bucket):
                        bucket.append(canonical)

    def match_text(self, text: str) -> object:
        for tier, key in enumerate((text, text.casefold(), _loose(text))):
            hits = self.tiers[tier].get(key)
            if hits:
                if len(hits) == 1:
                    return hits[0]
                raise Invalid(f"{text[:40]!r} matches several allowed values: {', '.join(map(repr, hits))}")
        return _MISSING

    def match_after_label(self, text: str) -> object:
        """The choice after a short label (at most three words, itself no allowed value)."""
        found = split_label(text, ":", "*_", _ANY_LABEL_WORDS)
        if found is None or len(found[0].split()) > 3 or self.match_text(found[0]) is not _MISSING:
            return _MISSING
        rest = unwrap_quotes(found[1].strip().rstrip(".!;,").rstrip())
        return self.match_text(rest) if rest else _MISSING

    def allowed(self) -> str:
        return ", ".join(repr(c.value if isinstance(c, enum.Enum) else c) for c in self.choices)

    def _convert_text(self, value: str, name: str) -> object:
        cleaned, inner = _scalar_text(value, name, self)
        if cleaned is None:  # the text was a JSON wrapper (["gold"], {"value": "gold"})
            return self.convert(inner, name, False)
        # a longer text is no choice: never case-folded or normalised whole (1 MB: 9 passes)
        hit = self.match_text(cleaned) if len(cleaned) <= self.max_text else _MISSING
        if hit is _MISSING and len(cleaned) <= self.max_text:
            hit = self.match_after_label(cleaned)
        if hit is _MISSING:
            raise Invalid(
                "the value is empty" if not cleaned else f"{cleaned[:60]!r} is not one of: {self.allowed()}"
            )
        return hit

    def _convert_wrapped(self, value: object, name: str) -> object:
        """Last resort: a single value wrapped in a one-item container; else a clear refusal."""
        ok, inner = unwrap_single(value, name)
        if ok and not isinstance(inner, (dict, list)):
            return self.convert(inner, name, False)
        if isinstance(value, (dict, list, bool)) or value is None:
            raise Invalid(f"expected one of: {self.allowed()}; got {describe_seen(value)}")
        raise Invalid(f"{value!r} is not one of: {self.allowed()}")

    def _text_fit(self, value: object) -> float:
        return 1.5 if isinstance(value, str) and self.tiers[0].get(value.strip()) else 0.0


_MISSING = object()


class LiteralNode(_ChoiceNode):
    """One of the Literal's values; text matched by the tiers above."""

    def __init__(self, annotation: object, choices: tuple[object, ...]) -> None:
        super().__init__(annotation)
        self.choices = choices
        self._index()

    def _options(self) -> list[tuple[object, list[str]]]:
        out: list[tuple[object, list[str]]] = []
        for c in self.choices:
            if isinstance(c, enum.Enum):
                forms = [c.name, f"{type(c).__name__}.{c.name}"]
                if isinstance(c.value, str):
                    forms.append(c.value)
                elif type(c.value) is int:
                    forms.append(str(c.value))
                out.append((c, forms))
            elif isinstance(c, bool):
                out.append((c, ["true", "yes"] if c else ["false", "no"]))
            elif isinstance(c, (str, int)):
                out.append((c, [str(c)]))
            elif c is None:
                out.append((c, ["None", "null"]))
            else:  # bytes and other exotic literals: exact str form only
                out.append((c, [str(c)]))
        return out

    def convert(self, value: object, name: str, text: bool) -> object:
        for c in self.choices:
            if _same(value, c):
                return c
        if isinstance(value, str):
            return self._convert_text(value, name)
        if isinstance(value, float) and value.is_integer() and not isinstance(value, bool):
            for c in self.choices:
                if _same(int(value), c):
                    return c
        if type(value) is int:
            hit = self.match_text(str(value))
            if hit is not _MISSING and not isinstance(hit, int):
                return hit
        return self._convert_wrapped(value, name)

    def fit(self, value: object, text: bool) -> float:
        if any(_same(value, c) for c in self.choices):
            return 2.0
        return self._text_fit(value)


class EnumNode(_ChoiceNode):
    """An Enum member by value or by name, in any case, or as ``Enum.NAME``."""

    def __init__(self, annotation: type[enum.Enum]) -> None:
        super().__init__(annotation)
        self.choices = tuple(annotation)
        self.by_value: dict[Any, enum.Enum] = {}
        for m in self.choices:
            try:
                self.by_value.setdefault((type(m.value), m.value), m)
            except TypeError:  # unhashable value
                pass
        self.numeric = all(type(m.value) is int for m in self.choices)
        self._index()

    def _options(self) -> list[tuple[object, list[str]]]:
        out = []
        for m in self.choices:
            forms = [m.name]
            if isinstance(m.value, str):
                forms.append(m.value)
            elif type(m.value) is int or type(m.value) is float:
                forms.append(str(m.value))
            out.append((m, forms))
        return out

    def match_text(self, text: str) -> object:
        """The tiers, then ``Enum.NAME`` and, for numeric enums, the value written as text."""
        hit = super().match_text(text)
        if hit is _MISSING:
            q = _QUALIFIED.match(text)
            if q and text.split(".")[0].casefold() == self.annotation.__name__.casefold():
                hit = super().match_text(q.group(1))
        if hit is _MISSING and self.numeric and INT_TEXT.fullmatch(text):
            hit = self.by_value.get((int, int(text)), _MISSING)
        return hit

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, self.annotation):
            return value
        if not isinstance(value, (str, bool, dict, list)):
            try:
                hit = self.by_value.get((type(value), value))
            except TypeError:
                hit = None
            if hit is not None:
                return hit
            if isinstance(value, float) and value.is_integer():
                hit = self.by_value.get((int, int(value)))
                if hit is not None:
                    return hit
        if isinstance(value, str):
            return self._convert_text(value, name)
        return self._convert_wrapped(value, name)

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, self.annotation):
            return 3.0
        if not isinstance(value, (str, bool, dict, list)):
            try:
                if (type(value), value) in self.by_value:
                    return 2.0
            except TypeError:
                return 0.0
        return self._text_fit(value)
