"""Reading one JSON value out of LM text, publicly: strict first, then repaired, never through a cut.

::

    parse_json_text('{"a": 1, "b": [1, 2,]}')     # {'a': 1, 'b': [1, 2]} (repaired)
    parse_json_text('{"a": 1, "b": "x')           # JSONTextError: the value is cut off in the middle ...

The value engine and the adapters share this reader, so every place that reads JSON out of a
model's answer repairs and refuses the same way (see :mod:`sigform.types.coercion._jsontext`).
"""

from __future__ import annotations

from typing import Any

from sigform.errors import JSONTextError

__all__ = ["MAX_REPAIR_CHARS", "JSONTextError", "parse_json_text"]

MAX_REPAIR_CHARS = 4_096  # longer text is read only when it is strict JSON (json-repair is slow)


def parse_json_text(text: str, *, repair: bool = True) -> Any:
    """Parse ``text`` (stripped, starting with ``{`` or ``[``) as JSON, repairing small mistakes.

    A value that was cut off (inside a string, a list, a key or a number) is never completed:
    that raises :class:`JSONTextError`, as does text that is not JSON even after repair, a
    repair that would drop or change part of the text (``"n": 12 or 13`` is not ``12``), and
    text longer than ``MAX_REPAIR_CHARS`` that is not strict JSON. ``repair=False`` reads strict
    JSON only.
    """
    from sigform.types.coercion._jsontext import parse_json
    from sigform.types.coercion._plan import Invalid

    try:
        return parse_json(text, repair=repair)
    except Invalid as exc:
        raise JSONTextError(exc.message) from None
