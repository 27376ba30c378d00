"""Reading JSON out of LM text: strict first, then json-repair, never through a truncation.

json-repair happily "completes" a value that was cut off (``["Lyon", "Nan`` becomes
``["Lyon", "Nan"]``), which would be a silently wrong value. So before repairing we scan the
text: a cut is accepted only when every value is complete and just closing braces of objects
are missing (``{"a": "x", "b": "y"``); a cut inside a string, a list, a key or a number is an
error.
"""

from __future__ import annotations

import json
from typing import Any

from sigform.types.coercion._plan import Invalid

__all__ = ["MAX_REPAIR_CHARS", "parse_json", "truncation_problem"]

MAX_REPAIR_CHARS = 200_000  # json-repair is pure Python; beyond this, only strict JSON is read
_LITERAL_ENDS = ("true", "false", "null", "True", "False", "None")


def parse_json(text: str) -> Any:
    """Parse ``text`` (stripped, starting with ``{`` or ``[``) as JSON, repairing if needed."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    problem = truncation_problem(text)
    if problem:
        raise Invalid(f"the value is cut off ({problem})")
    if len(text) > MAX_REPAIR_CHARS:
        raise Invalid("the value is not valid JSON (too long to repair)")
    try:
        import json_repair

        value = json_repair.loads(text)
    except Exception:  # json-repair has no documented error type; any failure means unreadable
        raise Invalid("the value is not valid JSON") from None
    if text[:1] == "{":
        # json-repair returns a list when it read several objects out of the text
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
            value = value[0]
        if not isinstance(value, dict):
            raise Invalid("the value is not one valid JSON object")
    elif not isinstance(value, list):
        raise Invalid("the value is not a valid JSON list")
    return value


def truncation_problem(text: str) -> str | None:
    """Describe where ``text`` was cut off, or ``None`` if it is complete or only lacks ``}``."""
    stack: list[str] = []
    quote = ""
    escaped = False
    last_sig = ""  # last significant character outside strings
    before_str = ""  # significant character before the last string opened
    last_kind = ""  # "str", "close", "word", "punct"
    word: list[str] = []
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
                last_kind = "str"
                last_sig = ch
            continue
        if ch in " \t\r\n":
            continue
        if ch == '"' or (ch == "'" and last_sig in ("", "{", "[", ",", ":")):
            quote = ch
            before_str = last_sig
            word = []
            continue
        if ch in "{[":
            stack.append(ch)
            last_kind = "punct"
            word = []
        elif ch in "}]":
            if stack:
                stack.pop()
            last_kind = "close"
            word = []
        elif ch in ",:":
            last_kind = "punct"
            word = []
        else:
            if last_kind != "word":
                word = []
            word.append(ch)
            last_kind = "word"
        last_sig = ch
    if quote:
        return "cut in the middle of a string"
    if not stack:
        return None
    if "[" in stack:
        return "cut in the middle of a list"
    if last_kind == "str":
        if before_str in ("{", ","):
            return "cut after a key"
        return None
    if last_kind == "close":
        return None
    if last_kind == "word" and "".join(word) in _LITERAL_ENDS:
        return None
    if last_kind == "word":
        return "cut at a value that may be incomplete"
    return "cut in the middle of an object"
