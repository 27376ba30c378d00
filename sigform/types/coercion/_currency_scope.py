"""Which numbers a field's currency applies to: its own, its collections' items, not its records'.

A field's description ("amounts in EUR") and name (``prices_usd``) fix the currency of every
number the field holds directly: the field itself, list/set/tuple items, dict values and union
members, at any depth. A nested record's numbers have their own names and descriptions (a
``price_usd`` and a ``price_eur`` can sit side by side), so the field's currency stops there.
"""

from __future__ import annotations

import collections.abc as cabc
from collections.abc import Callable
from decimal import Decimal
from typing import Union

from sigform.types.coercion._numbers import (
    CurrencyField,
    DescribedCurrency,
    PercentName,
    described_currency,
    field_currency,
    percent_allowed,
)
from sigform.types.inspection import args_of, origin_of, strip_annotated

__all__ = ["described_currency_for", "holds_numbers", "value_namer", "with_described_currency"]

_ITEMS = {
    list, set, frozenset, tuple, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection,
    cabc.Set, cabc.MutableSet,
}
_DICTS = {dict, cabc.Mapping, cabc.MutableMapping}


def holds_numbers(annotation: object) -> bool:
    """Whether the number parser reads some value of ``annotation`` outside a nested record."""
    base = strip_annotated(annotation)[0]
    if base is int or base is float or (isinstance(base, type) and issubclass(base, Decimal)):
        return True
    origin = origin_of(base)
    args = args_of(base)
    if origin is Union or origin in _ITEMS:
        return any(holds_numbers(a) for a in args if a is not Ellipsis)
    if origin in _DICTS:
        return len(args) == 2 and holds_numbers(args[1])
    return False


def described_currency_for(annotation: object, desc: str | None) -> DescribedCurrency | None:
    """The currency ``desc`` names, for an annotation holding numbers; else ``None``."""
    if not desc or not holds_numbers(annotation):
        return None
    code = described_currency(desc)
    return None if code is None else DescribedCurrency(code)


def with_described_currency(name: str, annotation: object, desc: str | None) -> str:
    """``name``, carrying the currency ``desc`` names when ``annotation`` holds numbers."""
    code = described_currency_for(annotation, desc)
    return name if code is None else CurrencyField(name, str(code))


def value_namer(field: str) -> Callable[[str], str]:
    """How a dict value is named, by its key (a key like ``fee_eur`` fixes a currency itself),
    still bound to the currency the whole field is named or described in, and taking ``%`` when
    the field does (``rates_percent``). Worked out once per field, applied per key."""
    percent = percent_allowed(field)
    currency: str | None = field.currency if isinstance(field, CurrencyField) else field_currency(field)
    why = field.why if isinstance(field, CurrencyField) else f"the currency of field {field!r}"
    if currency is not None:
        return lambda key: CurrencyField(key, currency, why, percent)
    return PercentName if percent else str
