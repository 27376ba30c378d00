"""Numbers from LM text: one clean number, or an error.

Accepted: an optional sign, digits with correctly grouped thousands separators
(``1,048,576``), a decimal part and exponent; ``$`` (or ``US$``, ``USD``) only on fields named
``*_usd``; ``%`` only on fields named ``*_percent`` (``8.25%`` is ``8.25``, not ``0.0825``). Everything else
(ranges, hedges, words, units, decimal commas) is an error: there is no single reading.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from sigform.types.coercion._plan import Invalid

__all__ = ["INT_TEXT", "parse_number"]

INT_TEXT = re.compile(r"[-+]?\d+")
_NUMBER = re.compile(
    r"""(?P<sign>[-+\u2212])?\s*(?P<cur>(?:US)?\$|USD(?![A-Za-z]))?\s*(?P<sign2>[-+\u2212])?
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d*)?|\.\d+)
    (?P<exp>[eE][-+]?\d{1,4})?
    \s*(?P<pct>%)?(?:\s*(?P<cur2>USD))?""",
    re.X,
)
_MAX_DIGITS = 4000  # Python refuses to convert longer digit strings to int


def parse_number(text: str, field: str, *, integer: bool) -> int | float:
    """Read one number from cleaned ``text`` for ``field``; ``integer`` asks for a whole number."""
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()  # sentence full stop: "42."
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise Invalid(_why_not_number(text))
    if m.group("sign") and m.group("sign2"):
        raise Invalid(f"{text!r} is not a number")
    lowered = field.lower()
    if (m.group("cur") or m.group("cur2")) and not lowered.endswith("_usd"):
        raise Invalid(f"a currency sign is only accepted on *_usd fields; saw {text!r}")
    if m.group("pct") and not lowered.endswith("_percent"):
        raise Invalid(f"a percent sign is only accepted on *_percent fields; saw {text!r}")
    digits = m.group("num").replace(",", "")
    if len(digits) > _MAX_DIGITS:
        raise Invalid("the number is too long")
    negative = (m.group("sign") or m.group("sign2") or "") in ("-", "\u2212")
    literal = ("-" if negative else "") + digits + (m.group("exp") or "")
    if integer:
        try:
            dec = Decimal(literal)
        except InvalidOperation:
            raise Invalid(f"{text!r} is not a number") from None
        if dec != dec.to_integral_value():
            raise Invalid(f"{text!r} is not a whole number")
        if dec.adjusted() > _MAX_DIGITS:
            raise Invalid("the number is too large")
        return int(dec)
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise Invalid(f"{text!r} is too large for a float")
    return value


_RANGE = re.compile(r"\d\s*(?:-|–|—|to|and)\s*[-+$]?\d")


def _why_not_number(text: str) -> str:
    if not text:
        return "the value is empty"
    if _RANGE.search(text):
        return f"{text!r} is a range or several numbers, not one number"
    if re.search(r"\d", text):
        return f"{text!r} is not a plain number"
    return f"{text!r} is not a number"
