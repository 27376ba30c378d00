"""Numbers from LM text: one clean number, or an error.

Accepted: an optional sign, digits with correctly grouped thousands separators
(``1,048,576``), a decimal part and exponent; a currency mark before or after the number
(``$``, ``US$``, ``€``, ``£``, ``¥``, ``₹``, ``USD``, ``EUR`` ...: ``-$45.10``, ``$2,450.00``,
``2,450.00 USD``) unless it contradicts the currency the field's name or description gives
(``€`` on ``price_usd``, ``$`` on ``fee_eur``, ``$`` on a field described as "amount in EUR");
``%`` only on fields named ``*_percent`` and on the values of such a field's dicts (``8.25%`` is
``8.25``, not ``0.0825``), where a currency mark is an error (``$20`` is no percentage).
Everything else (ranges, hedges, words, units, decimal commas) is an error: there is no single
reading. The same rules read ``Decimal`` fields (:func:`parse_decimal`,
exactly: ``$0.10`` is ``Decimal("0.10")``).
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

import regex

from sigform.excerpt import shorten
from sigform.types.coercion._plan import Invalid

__all__ = [
    "CURRENCY_MARK",
    "INT_TEXT",
    "CurrencyField",
    "DescribedCurrency",
    "PercentName",
    "described_currency",
    "field_currency",
    "parse_decimal",
    "parse_number",
    "percent_allowed",
]

INT_TEXT = re.compile(r"[-+]?\d+")
# mark as written (upper case) -> the currencies it can mean
_MARKS: dict[str, frozenset[str]] = {
    "$": frozenset({"USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN"}),
    "US$": frozenset({"USD"}), "A$": frozenset({"AUD"}), "C$": frozenset({"CAD"}),
    "NZ$": frozenset({"NZD"}), "HK$": frozenset({"HKD"}), "S$": frozenset({"SGD"}),
    "€": frozenset({"EUR"}), "£": frozenset({"GBP"}), "¥": frozenset({"JPY", "CNY"}),
    "₹": frozenset({"INR"}), "₩": frozenset({"KRW"}), "₽": frozenset({"RUB"}), "₺": frozenset({"TRY"}),
    **{code: frozenset({code}) for code in (
        "USD", "EUR", "GBP", "JPY", "CNY", "INR", "CHF", "CAD", "AUD", "NZD", "HKD", "SGD", "SEK",
        "NOK", "DKK", "MXN", "BRL", "KRW", "RUB", "TRY", "ZAR", "PLN",
    )},
}
# words in a field's name that fix its currency
_NAME_WORDS: dict[str, str] = {
    **{code.lower(): code for marks in _MARKS.values() for code in marks},
    "dollar": "USD", "dollars": "USD", "euro": "EUR", "euros": "EUR", "pound": "GBP", "pounds": "GBP",
    "sterling": "GBP", "yen": "JPY", "yuan": "CNY", "rmb": "CNY", "rupee": "INR", "rupees": "INR",
}
_NAME_WORDS.pop("try")  # the Turkish lira's code is an English word (`try_count`)
_MARK = "|".join(regex.escape(m) for m in sorted(_MARKS, key=len, reverse=True))
CURRENCY_MARK = r"(?:(?i:" + _MARK + r")(?![A-Za-z]))"  # a currency mark, for other number patterns
_NUMBER = regex.compile(
    r"""(?P<sign>[-+\u2212])?\s*+(?P<cur>(?:""" + _MARK + r""")(?![A-Za-z]))?\s*+(?P<sign2>[-+\u2212])?
    (?P<num>\d{1,3}(?:,\d{3})++(?:\.\d++)?|\d++(?:\.\d*+)?|\.\d++)
    (?P<exp>[eE][-+]?0*\d{1,4})?
    \s*+(?P<pct>%)?(?:\s*+(?P<cur2>(?:""" + _MARK + r""")(?![A-Za-z])))?""",
    regex.X | regex.IGNORECASE,
)
_NAME_SPLIT = regex.compile(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])")
_MAX_DIGITS = 4000  # Python refuses to convert longer digit strings to int


@functools.lru_cache(maxsize=4096)  # asked once per dict value: 10k `k: v` lines, a few names
def field_currency(field: str) -> str | None:
    """The currency a field's name gives (``amount_usd`` -> ``USD``, ``priceInEuros`` -> ``EUR``)."""
    found = {_NAME_WORDS[w.lower()] for w in _NAME_SPLIT.split(field) if w.lower() in _NAME_WORDS}
    return found.pop() if len(found) == 1 else None


# the symbols that name one currency, when a description uses them (`$` could be several)
_SYMBOLS = {m: next(iter(codes)) for m, codes in _MARKS.items() if not m.isalpha() and len(codes) == 1}
_WORD = regex.compile(r"[A-Za-z]+")


def described_currency(desc: str) -> str | None:
    """The one currency a field's description names ("amount in EUR", "price in euros", "in £"),
    or ``None`` (none, or several: "USD or EUR")."""
    found = {_NAME_WORDS[w.lower()] for w in _WORD.findall(desc) if w.lower() in _NAME_WORDS}
    found.update(code for mark, code in _SYMBOLS.items() if mark in desc)
    return found.pop() if len(found) == 1 else None


class DescribedCurrency(str):
    """``Annotated`` metadata on a numeric field whose description names a currency: the code."""

    __slots__ = ()


class CurrencyField(str):
    """A name to read a number under that also carries the currency the number must be in
    (``.currency``) and why, for the error (``.why``: "the currency field 'price' is described in");
    ``.percent``: ``%`` is accepted (a dict value of a ``*_percent`` field)."""

    __slots__ = ("currency", "percent", "why")
    currency: str
    why: str
    percent: bool

    def __new__(cls, name: str, currency: str, why: str = "", percent: bool = False) -> CurrencyField:
        self = super().__new__(cls, name)
        self.currency = currency
        self.why = why or f"the currency field {name!r} is described in"
        self.percent = percent
        return self

    def __reduce__(self) -> tuple[type[CurrencyField], tuple[str, str, str, bool]]:
        # copies and pickles keep the currency (str's own reduce would call __new__ with the name only)
        return (CurrencyField, (str(self), self.currency, self.why, self.percent))


class PercentName(str):
    """The name a dict value of a ``*_percent`` field is read under (its key): ``%`` is accepted
    there as on the field itself (``rates_percent: {"vat": "20%"}``)."""

    __slots__ = ()
    percent = True


def percent_allowed(field: str) -> bool:
    """Whether ``%`` is accepted on a number read under ``field``."""
    return field.lower().endswith("_percent") or getattr(field, "percent", False) is True


def _check_currency(text: str, field: str, marks: list[str]) -> None:
    means = [_MARKS[m.upper()] for m in marks]
    if len(means) == 2 and not means[0] & means[1]:
        raise Invalid(f"{text!r} names two currencies")
    named = field_currency(field)
    if named is not None and any(named not in m for m in means):
        raise Invalid(f"{text!r} is not in {named}, the currency of field {field!r}")
    if isinstance(field, CurrencyField) and any(field.currency not in m for m in means):
        raise Invalid(f"{text!r} is not in {field.currency}, {field.why}")


def _number_literal(text: str, field: str) -> str:
    """The one number in cleaned ``text`` for ``field`` as a plain literal (``-2450.00``), or
    :class:`Invalid` saying why there is none (marks and ``%`` checked against the field)."""
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()  # sentence full stop: "42."
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise Invalid(_why_not_number(text))
    if m.group("sign") and m.group("sign2"):
        raise Invalid(f"{text!r} is not a number")
    marks = [c for c in (m.group("cur"), m.group("cur2")) if c]
    if marks and percent_allowed(field):  # "$20" on fee_percent is money, not 20 percent
        raise Invalid(f"{text!r} is an amount of money; a *_percent field holds percentages")
    if marks:
        _check_currency(text, field, marks)
    if m.group("pct") and (marks or not percent_allowed(field)):
        raise Invalid(f"a percent sign is only accepted on *_percent fields; saw {text!r}")
    digits = m.group("num").replace(",", "")
    if len(digits) > _MAX_DIGITS:
        raise Invalid("the number is too long")
    negative = (m.group("sign") or m.group("sign2") or "") in ("-", "\u2212")
    return ("-" if negative else "") + digits + (m.group("exp") or "")


def parse_number(text: str, field: str, *, integer: bool) -> int | float:
    """Read one number from cleaned ``text`` for ``field``; ``integer`` asks for a whole number."""
    literal = _number_literal(text, field)
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


def parse_decimal(text: str, field: str) -> Decimal | None:
    """Read one number from cleaned ``text`` for ``field`` exactly, by the rules of
    :func:`parse_number`; ``None`` when ``text`` has no number's shape at all (pydantic's own
    Decimal reading then decides, as it always did for such text)."""
    literal = _number_literal(text, field) if _NUMBER.fullmatch(text.removesuffix(".").rstrip()) else None
    return None if literal is None else Decimal(literal)


_RANGE = re.compile(r"\d\s*(?:-|–|—|to|and)\s*[-+$€£]?\d")


def _why_not_number(text: str) -> str:
    if not text:
        return "the value is empty"
    if len(text) > 200:  # no number is written this long: name its length and ends, not all of it
        return f"the value is not a number ({len(text):,} characters: {shorten(text, 60)})"
    if _RANGE.search(text):
        return f"{text!r} is a range or several numbers, not one number"
    if re.search(r"\d", text):
        return f"{text!r} is not a plain number"
    return f"{text!r} is not a number"
