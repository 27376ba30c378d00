"""Scalar nodes: str, bool, int, float, None, Any, and types pydantic reads from a string."""

from __future__ import annotations

import json
import math
import re

from sigform.types.coercion._jsontext import parse_json
from sigform.types.coercion._numbers import INT_TEXT, parse_decimal, parse_number
from sigform.types.coercion._plan import Invalid, Node
from sigform.types.coercion._text import NULL_WORDS, WRAPPER_KEYS, clean_scalar, key_norm, strip_fence

__all__ = [
    "AnyNode",
    "BoolNode",
    "FloatNode",
    "HookNode",
    "IntNode",
    "NoneNode",
    "StrNode",
    "TextParsedNode",
    "describe_seen",
    "unwrap_single",
]

_FLOAT_TEXT = re.compile(r"-?\d{1,300}\.\d{1,300}(?:[eE][-+]?\d{1,3})?")
_TRUE = frozenset({"true", "yes"})
_FALSE = frozenset({"false", "no"})


def describe_seen(value: object) -> str:
    """A few words naming what kind of value was seen."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def unwrap_single(value: object, name: str) -> tuple[bool, object]:
    """Unwrap a single value from ``{"answer": x}`` (key = field name or a wrapper word) or ``[x]``."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if isinstance(key, str) and (key_norm(key) == key_norm(name) or key_norm(key) in WRAPPER_KEYS):
            return True, inner
    elif isinstance(value, list) and len(value) == 1:
        return True, value[0]
    return False, value


def _scalar_text(value: str, name: str, node: Node) -> tuple[str | None, object]:
    """Clean scalar text; when it holds a JSON wrapper (``{"value": 3}``, ``[3]``) return the inner value."""
    cleaned = clean_scalar(value, name, punctuation=True)
    if cleaned[:1] in ("{", "[") and cleaned[-1:] in ("}", "]"):
        try:
            parsed = parse_json(cleaned)
        except Invalid:
            return cleaned, None
        ok, inner = unwrap_single(parsed, name)
        if ok:
            return None, inner
    return cleaned, None


class StrNode(Node):
    """Text. Free text is stripped and a complete JSON string literal is unwrapped;
    numbers are accepted as their digits; objects, lists and booleans are errors."""

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, str):
            if not text:
                return value
            s = value.strip()
            if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
                try:
                    inner = json.loads(s)
                except ValueError:
                    return s
                if isinstance(inner, str):
                    return inner
            return s
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        ok, inner = unwrap_single(value, name)
        if ok and isinstance(inner, str):
            return inner
        raise Invalid(f"expected text, got {describe_seen(value)}")

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, str):
            if not text:
                return 2.0
            s = value.strip()
            return 2.0 if len(s) >= 2 and s[0] == '"' and s[-1] == '"' else -1.0
        return 0.0


class BoolNode(Node):
    """``true/false/yes/no`` in any case, quoted or in backticks; nothing else."""

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            cleaned, inner = _scalar_text(value, name, self)
            if cleaned is None:
                return self.convert(inner, name, False)
            low = cleaned.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise Invalid(
                "the value is empty" if not low else f"{cleaned[:40]!r} is not true/false or yes/no"
            )
        ok, inner = unwrap_single(value, name)
        if ok:
            return self.convert(inner, name, False)
        raise Invalid(f"expected true or false, got {describe_seen(value)}")

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, bool):
            return 2.0
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return 1.0
        return 0.0


class IntNode(Node):
    """A whole number: digits, grouped thousands, or an integral float (``312.0``)."""

    integer = True

    def convert(self, value: object, name: str, text: bool) -> object:
        if type(value) is int:
            return self._finish(value)
        if isinstance(value, bool):
            raise Invalid("expected a number, got a boolean")
        if isinstance(value, str):
            s = value.strip()
            if INT_TEXT.fullmatch(s) and len(s) < 4000:
                return self._finish(int(s))
            if not self.integer and _FLOAT_TEXT.fullmatch(s):  # clean float: skip the slow path
                f = float(s)
                if math.isfinite(f):
                    return f
            cleaned, inner = _scalar_text(value, name, self)
            if cleaned is None:
                return self.convert(inner, name, False)
            return self._finish(parse_number(cleaned, name, integer=self.integer))
        if isinstance(value, float):
            return self._from_float(value)
        if isinstance(value, int):  # int subclasses (IntEnum members...)
            return self._finish(int(value))
        ok, inner = unwrap_single(value, name)
        if ok and not isinstance(inner, (dict, list)):
            return self.convert(inner, name, False)
        raise Invalid(f"expected a number, got {describe_seen(value)}")

    def _from_float(self, value: float) -> object:
        if not math.isfinite(value) or not value.is_integer():
            raise Invalid(f"{value!r} is not a whole number")
        return int(value)

    def _finish(self, value: int | float) -> object:
        return value

    def fit(self, value: object, text: bool) -> float:
        if type(value) is int:
            return 2.0
        if isinstance(value, str) and INT_TEXT.fullmatch(value.strip()):
            return 1.0
        return 0.0


class FloatNode(IntNode):
    """A number; ints are widened to float."""

    integer = False

    def _from_float(self, value: float) -> object:
        if not math.isfinite(value):  # NaN/Infinity (Python's json reads them): no usable number
            raise Invalid(f"{value!r} is not a finite number")
        return value

    def _finish(self, value: int | float) -> object:
        return float(value)

    def fit(self, value: object, text: bool) -> float:
        if type(value) is float:
            return 2.0
        if type(value) is int:
            return 1.0
        if isinstance(value, str):
            s = value.strip()
            if INT_TEXT.fullmatch(s):
                return 0.5
            try:
                float(s)
            except ValueError:
                return 0.0
            return 1.0
        return 0.0


class NoneNode(Node):
    """``None``: JSON null, or the words None/null (any case), or empty text."""

    def convert(self, value: object, name: str, text: bool) -> object:
        if value is None:
            return None
        if isinstance(value, str):
            cleaned = clean_scalar(value, name, punctuation=True)
            if not cleaned or cleaned.lower() in NULL_WORDS:
                return None
            raise Invalid(f"{cleaned[:40]!r} is not None/null")
        raise Invalid(f"expected null, got {describe_seen(value)}")

    def fit(self, value: object, text: bool) -> float:
        return 2.0 if value is None else 1.0


class AnyNode(Node):
    """``Any``: parsed JSON stays as is; text that is a JSON object/list is parsed."""

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, str) and text:
            s = strip_fence(value.strip())
            if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
                try:
                    return json.loads(s)
                except ValueError:
                    return s
            if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
                try:
                    return parse_json(s)
                except Invalid:
                    return s
            return s
        return value


class TextParsedNode(Node):
    """Types pydantic reads from a string (date, datetime, Decimal, UUID, ...): the text is
    cleaned of quotes/labels and handed to pydantic; numbers and booleans are refused."""

    needs_validation = True

    def __init__(self, annotation: object, accept_numbers: bool = False) -> None:
        super().__init__(annotation)
        self.accept_numbers = accept_numbers

    def convert(self, value: object, name: str, text: bool) -> object:
        if isinstance(value, str):
            cleaned, inner = _scalar_text(value, name, self)
            if cleaned is None:
                return self.convert(inner, name, False)
            if not cleaned:
                raise Invalid("the value is empty")
            return cleaned
        if isinstance(value, self.annotation):
            return value
        if isinstance(value, bool) or (isinstance(value, (int, float)) and not self.accept_numbers):
            raise Invalid(
                f"expected {getattr(self.annotation, '__name__', 'a value')}, got {describe_seen(value)}"
            )
        ok, inner = unwrap_single(value, name)
        if ok:
            return self.convert(inner, name, False)
        return value

    def fit(self, value: object, text: bool) -> float:
        if isinstance(value, self.annotation):
            return 2.0
        return 1.0 if isinstance(value, str) else 0.0


class DecimalNode(TextParsedNode):
    """``Decimal``: text in a number's shape is read by the float fields' rules (grouped
    thousands, a currency mark unless it contradicts the field's currency, ``%`` on ``*_percent``
    fields), exactly (``$0.10`` -> ``Decimal("0.10")``); other text goes to pydantic as before."""

    def __init__(self, annotation: object) -> None:
        super().__init__(annotation, accept_numbers=True)

    def convert(self, value: object, name: str, text: bool) -> object:
        out = super().convert(value, name, text)
        if isinstance(out, str):
            number = parse_decimal(out, name)
            if number is not None:
                return number
        return out


class HookNode(Node):
    """A class with ``__sigform_coerce__(value)`` reads its own values (custom types)."""

    needs_validation = False

    def convert(self, value: object, name: str, text: bool) -> object:
        try:
            return self.annotation.__sigform_coerce__(value)
        except Invalid:
            raise
        except (ValueError, TypeError) as exc:
            raise Invalid(str(exc) or f"not a valid {self.annotation.__name__}") from None

    def fit(self, value: object, text: bool) -> float:
        return 2.0 if isinstance(value, self.annotation) else 0.5
