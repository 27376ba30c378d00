"""An echoed input never parses as the answer.

Small models often repeat their input. An input that holds answer-shaped text (``<answer>42``,
``{"answer": 42}``, ``answer: 42``) would then be read as the answer, in whichever format the
parser falls back to. So when the completion contains an input's text (as given, JSON-escaped
or XML-escaped), the answer is read twice: from the completion with every such echo blanked out
(same length, so positions hold), and as written. A field is taken only where the blanked
reading finds it:

* found only in the echo -> missing (the model did not answer it);
* found outside the echo -> that value (an echoed input later in the text does not override it);
* its value overlaps an echo (the answer quotes the input) -> the value as written there.

Only inputs with a marker that some format reads (``{``, ``<``, ``[[``, ``:``) are looked for.
Cost: one ``str.find`` pass per input form, linear in the completion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sigform.adapters.extraction import Extracted
from sigform.adapters.xml_scan import escape_text

__all__ = ["MASK", "EchoMask", "mask_echoes"]

MASK = "\ue000"  # a private-use character: no format reads it as structure
_MARKERS = ("{", "<", "[[", ":")
_MIN_LENGTH = 4


def _forms(value: object) -> set[str]:
    if isinstance(value, str):
        if not any(m in value for m in _MARKERS):
            return set()  # escaping (JSON, XML) adds no marker: no form of it has one either
        text = value.strip()
        forms = {text, json.dumps(text, ensure_ascii=False)[1:-1], escape_text(text)}
    else:
        try:
            separators = ((",", ":"), (", ", ": "))
            forms = {json.dumps(value, ensure_ascii=False, default=str, separators=sep) for sep in separators}
        except (TypeError, ValueError):
            return set()
    return {f for f in forms if len(f) >= _MIN_LENGTH and any(m in f for m in _MARKERS)}


@dataclass
class EchoMask:
    """The completion with echoed inputs blanked out."""

    masked: str

    def merge(self, blanked: Extracted, written: Extracted) -> Extracted:
        """Fields as the blanked reading finds them; values overlapping an echo as written."""
        for name, value in list(blanked.values.items()):
            if _has_mask(value) and name in written.values:
                blanked.values[name] = written.values[name]
        if not blanked.values and written.values and not blanked.note:
            blanked.note = "the only answer-shaped text is a repeated input"
        return blanked


def mask_echoes(completion: str, inputs: Mapping[str, object]) -> EchoMask | None:
    """The completion with every echoed input blanked, or ``None`` when it repeats none."""
    masked = completion
    for value in inputs.values():
        for form in _forms(value):
            if form in masked:
                masked = masked.replace(form, MASK * len(form))
    return None if masked is completion else EchoMask(masked)


def _has_mask(value: object) -> bool:
    if isinstance(value, str):
        return MASK in value
    if isinstance(value, dict):
        return any(_has_mask(k) or _has_mask(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_mask(v) for v in value)
    return False
