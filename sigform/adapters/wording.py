"""Small wording filters for the prompt templates (registered on every adapter's jinja2 environment).

* ``in_words`` -- a constraint text with its comparison operator in words (``"<= 10"`` ->
  ``"at most 10"``), for formats where ``<`` and ``>`` are markup (XML);
* ``xml_text`` -- text escaped for XML content (``&``, ``<``, ``>``), as the model is asked to write it.
"""

from __future__ import annotations

from sigform.adapters.xml_scan import escape_text

__all__ = ["FILTERS", "constraint_in_words"]

# longest operators first, so ">=" is not read as ">"
_OPERATORS = ((">=", "at least"), ("<=", "at most"), (">", "greater than"), ("<", "less than"))


def constraint_in_words(text: str) -> str:
    """``">= 0"`` -> ``"at least 0"``, ``"< 5"`` -> ``"less than 5"``; other texts unchanged."""
    for op, words in _OPERATORS:
        if text.startswith(op + " "):
            return f"{words} {text[len(op) + 1 :]}"
    return text


FILTERS = {"in_words": constraint_in_words, "xml_text": escape_text}
