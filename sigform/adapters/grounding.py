"""Text mode: a nullable output the inputs do not state is null.

A small base model continuing a few-shot document fills every field: asked for an event's
capacity, a person's age or an invoice's due date that the text never gives, it writes a number,
a city or a date anyway (a round ``100``, a demo's ``2025-04-15``), a value of the right type that
no validation can catch. Extraction tools check such values against the source (a value that
cannot be traced to the text is unverified); for a field declared ``Optional`` the signature
already says what "not stated" is: ``None``.

So in text mode (``lm.model_type == "text"``, see :mod:`sigform.adapters.document`) each
``Optional`` output, and each ``Optional`` field of a pydantic model among the outputs, whose value
the inputs do not state becomes ``None`` (a model only if its validators accept the change):

* a number is stated when the inputs write it: in digits (``2,450.00``, ``1st``) or in words
  (``fifty-year-old``, ``for six``);
* a date when its day and its month are there (``April 2, 2025``, ``2025-04-02``, ``2 Apr``);
* a short string (a name or a place: up to six words, not a sentence) when the inputs contain it
  (case and spacing aside); longer text and sentences are written, not copied, and never checked.

Other values (booleans, choices: a ``Literal`` or an ``Enum``, lists, times) are not checked, nor
is any output that cannot be null. Each value set to ``None`` is named in ``pred._meta.unstated``
(``"due_date"``, ``"event.venues[0].city"``) and the model's own answer is kept as written in
``pred._meta.raw``. Chat models are not checked. An adapter subclass with ``null_unstated = False``
keeps every value as the model gave it.
"""

from __future__ import annotations

import datetime
import enum
import re
import typing
from collections.abc import Mapping
from typing import Any

from sigform.types.inspection import split_optional, strip_annotated

__all__ = ["ground_outputs", "stated"]

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")  # a sign aside: `2025-04-02` is no -4
# from a run's first digit only: tried from each digit, a long run took quadratic time
_DECIMAL_COMMA = re.compile(r"(?<!\d)\d+,\d{1,2}\b")
_WORD = re.compile(r"[^\W\d_]+")
_UNITS = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"),
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUES = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS)},
    "a": 1,
    "dozen": 12,
    "hundred": 100,
    "thousand": 1000,
}
_SCALES = ("dozen", "hundred", "thousand")
_MAX_WORDED = 10**15  # "thousand thousand ..." grows no further (1000**103 is past any float)
_COPIED_WORDS = 6  # the longest string checked: a name, a place, a title
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def ground_outputs(
    annotations: Mapping[str, object], outputs: dict[str, Any], inputs: Mapping[str, object]
) -> tuple[str, ...]:
    """Set to ``None``, in place, each nullable value of ``outputs`` that ``inputs`` do not state;
    return where each was (``"age"``, ``"event.venues[0].city"``)."""
    text = "\n".join(str(v) for v in inputs.values() if v is not None)
    facts = _Facts(text)
    nulled: list[str] = []
    for name, annotation in annotations.items():
        if name in outputs:
            outputs[name] = _grounded(outputs[name], annotation, facts, name, nulled)
    return tuple(nulled)


def stated(value: object, text: str) -> bool:
    """Whether ``text`` states ``value`` (see the module docstring); True for unchecked kinds."""
    return _Facts(text).states(value)


def _grounded(value: Any, annotation: object, facts: _Facts, path: str, nulled: list[str]) -> Any:
    if value is None:
        return None
    base, nullable = split_optional(strip_annotated(annotation)[0])
    if nullable and not _choice(base) and not facts.states(value):
        nulled.append(path)
        return None
    from pydantic import BaseModel, ValidationError

    if isinstance(value, BaseModel):
        before = len(nulled)
        fields = type(value).model_fields
        changed = {
            n: _grounded(getattr(value, n), f.annotation, facts, f"{path}.{n}", nulled)
            for n, f in fields.items()
        }
        changed = {n: v for n, v in changed.items() if v is not getattr(value, n)}
        if not changed:
            return value
        try:  # the model's own validators have the last word (e.g. "an email or a phone")
            return type(value).model_validate({**dict(value), **changed})
        except ValidationError:
            del nulled[before:]
            return value
    if isinstance(value, list):
        args = typing.get_args(strip_annotated(base)[0])
        item = args[0] if len(args) == 1 else Any
        return [_grounded(v, item, facts, f"{path}[{i}]", nulled) for i, v in enumerate(value)]
    return value


def _choice(annotation: object) -> bool:
    """A Literal or an Enum: the model chooses it, the text need not write it."""
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


class _Facts:
    """What a text states: its numbers, its words, its lower-cased text."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.casefold().replace("\u2019", "'").split())
        self._numbers: set[float] | None = None
        self._words: list[str] | None = None

    @property
    def words(self) -> list[str]:
        if self._words is None:
            self._words = _WORD.findall(self.text)
        return self._words

    @property
    def numbers(self) -> set[float]:
        if self._numbers is None:
            found = {float(m.replace(",", "")) for m in _NUMBER.findall(self.text)}
            found |= {float(m.replace(",", ".")) for m in _DECIMAL_COMMA.findall(self.text)}
            self._numbers = found | _worded_numbers(self.words)
        return self._numbers

    def states(self, value: object) -> bool:
        if isinstance(value, bool):
            return True
        if isinstance(value, (int, float)):
            try:
                return float(abs(value)) in self.numbers
            except OverflowError:  # an int past any float (a model repeating a digit): unchecked
                return True
        if isinstance(value, datetime.date):
            month = value.month in self.numbers or any(
                w.startswith(_MONTHS[value.month - 1]) for w in self.words
            )
            return value.day in self.numbers and month
        if isinstance(value, str):
            words = value.casefold().replace("\u2019", "'").split()
            # a name or a place is copied from the text; a sentence or longer text is written
            if len(words) > _COPIED_WORDS or value.rstrip().endswith((".", "!", "?", "\u2026")):
                return True
            return " ".join(words) in self.text
        return True


def _worded_numbers(words: list[str]) -> set[float]:
    """The numbers written in words: ``fifty five`` -> {50, 55}, ``two hundred`` -> {2, 200},
    ``a dozen`` -> {12}."""
    found: set[float] = set()
    total = 0
    for word in words:
        value = _WORD_VALUES.get(word)
        if value is None:
            total = 0
        elif word == "a":
            total = 1  # only as in "a dozen", "a hundred"
        else:
            if word in _SCALES:
                total = max(total, 1) * value if total < _MAX_WORDED else value
            elif (total >= 20 and total % 10 == 0 and value < 10) or (total >= 100 and total % 100 == 0):
                total += value  # fifty five, two hundred five
            else:
                total = value
            found.add(float(total))
    return found
