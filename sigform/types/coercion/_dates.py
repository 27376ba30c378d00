"""Dates written the way people write them, read only when there is one reading.

Accepted for a ``date`` field, besides what pydantic reads (ISO ``2025-05-01``, an ISO datetime
at midnight): year first with slashes or dots (``2025/05/01``), and a month name with a day and
a four-digit year in any common order -- ``May 1, 2025``, ``1 May 2025``, ``12 February 2025``,
``Feb 12th, 2025``, ``1st of May 2025``, ``2025 May 1`` -- optionally after a weekday, which must
then be the date's own (``Thursday, May 1, 2025``). Month names and abbreviations are English,
any case. Everything that needs a guess stays an error: all-numeric dates whose day and month
could swap (``01/02/2025``), a date without a year (``July 18``), two-digit years.
"""

from __future__ import annotations

import datetime as dt

import regex

from sigform.types.coercion._plan import Invalid
from sigform.types.coercion._scalars import TextParsedNode

__all__ = ["DateNode", "read_date"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thurs"),
         ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")]
    )
    for name in names
}
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_WEEKDAY = r"(?:(?P<weekday>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\.?,?[ \t]++)?"
_FORMS = [
    regex.compile(_WEEKDAY + _MONTH + r"[ \t]++" + _DAY + r",?[ \t]++" + _YEAR, regex.IGNORECASE),
    regex.compile(
        _WEEKDAY + r"(?:the[ \t]++)?" + _DAY + r"(?:[ \t]++of)?[ \t]++" + _MONTH + r",?[ \t]++" + _YEAR,
        regex.IGNORECASE,
    ),
    regex.compile(_YEAR + r",?[ \t]++" + _MONTH + r"[ \t]++" + _DAY, regex.IGNORECASE),
    regex.compile(r"(?P<year>\d{4})[/.](?P<month>\d{1,2})[/.](?P<day>\d{1,2})"),
]


def read_date(text: str) -> dt.date | None:
    """The date ``text`` names in one of the forms above; ``None`` when it is in none of them.

    Raises :class:`Invalid` when the form is recognised but the date does not exist or the
    weekday contradicts it."""
    for form in _FORMS:
        match = form.fullmatch(text)
        if match is None:
            continue
        month_text = match.group("month")
        month = int(month_text) if month_text.isdigit() else _MONTHS.get(month_text.lower())
        if month is None:
            continue
        try:
            value = dt.date(int(match.group("year")), month, int(match.group("day")))
        except ValueError:
            raise Invalid(f"{text!r} is not a real date") from None
        weekday = match.groupdict().get("weekday")
        if weekday and _WEEKDAYS[weekday.lower()] != value.weekday():
            raise Invalid(f"{text!r}: {value.isoformat()} is a {value.strftime('%A')}, not a {weekday}")
        return value
    return None


class DateNode(TextParsedNode):
    """``datetime.date``: the forms of :func:`read_date`, else the text goes to pydantic."""

    def convert(self, value: object, name: str, text: bool) -> object:
        out = super().convert(value, name, text)
        if isinstance(out, str):
            found = read_date(out)
            if found is not None:
                return found
        return out
