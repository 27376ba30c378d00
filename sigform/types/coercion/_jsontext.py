"""Reading JSON out of LM text: strict first, then json-repair, never through a truncation.

json-repair happily "completes" a value that was cut off (``["Lyon", "Nan`` becomes
``["Lyon", "Nan"]``), which would be a silently wrong value. So before repairing we scan the
text: a cut is accepted only when every value is complete and just closing braces of objects
are missing (``{"a": "x", "b": "y"``); a cut inside a string, a list, a key or a number is an
error. json-repair also reads a bare value only as far as it looks like JSON (``1 000 000`` ->
``1``): :mod:`~sigform.types.coercion._repair_guard` makes bare values safe first and refuses a
repair that lost part of the text.

Bounds: strict parsing is C speed on any length. The truncation scan and json-repair (pure
Python, up to ~12 µs a character on garbled text) run only on text of at most
``MAX_REPAIR_CHARS`` characters nested at most ``MAX_DEPTH`` deep; longer or deeper text that is
not strict JSON is refused with a message saying so.
"""

from __future__ import annotations

import json

import regex

from sigform.types.coercion._plan import Invalid
from sigform.types.coercion._repair_guard import check_repair, guard_bare_values
from sigform.types.json_text import MAX_REPAIR_CHARS

__all__ = ["MAX_DEPTH", "MAX_REPAIR_CHARS", "parse_json", "truncation_problem"]

MAX_DEPTH = 64  # no answer nests deeper; json-repair recurses once per level
_LITERAL_ENDS = frozenset({"true", "false", "null", "True", "False", "None"})
_TOKEN = regex.compile(
    r"""(?P<space>\s++)
    |(?P<dq>"(?:[^"\\]++|\\.)*+"?)
    |(?P<open>[{\[]++)
    |(?P<close>[}\]]++)
    |(?P<punct>[,:])
    |(?P<sq>')
    |(?P<word>[^\s{}\[\],:"']++)""",
    regex.VERBOSE | regex.DOTALL,
)
_SINGLE_QUOTED = regex.compile(r"'(?:[^'\\]++|\\.)*+'?", regex.DOTALL)


def parse_json(text: str, *, repair: bool = True) -> object:
    """Parse ``text`` (stripped, starting with ``{`` or ``[``) as JSON, repairing if needed
    (``repair=False``: strict JSON only)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if not repair:
        raise Invalid("the value is not valid JSON (no repair budget left for this answer)")
    if len(text) > MAX_REPAIR_CHARS:
        raise Invalid(
            f"the value is not valid JSON ({len(text):,} characters: too long to repair; "
            f"repairs stop at {MAX_REPAIR_CHARS:,})"
        )
    problem = truncation_problem(text)
    if problem:
        raise Invalid(f"the value is {problem.replace('cut ', 'cut off ', 1)}")  # "is cut off after a key"
    guarded, source = guard_bare_values(text)
    try:
        import json_repair

        value = json_repair.loads(guarded)
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
    check_repair(value, source)
    return value


def truncation_problem(text: str) -> str | None:
    """Describe where ``text`` was cut off, or ``None`` if it is complete or only lacks ``}``.

    One pass over the tokens of ``text``; nesting deeper than ``MAX_DEPTH`` is reported too.
    """
    stack: list[str] = []
    last_sig = ""  # last significant character outside strings
    before_str = ""  # significant character before the last string opened
    last_kind = ""  # "str", "close", "word", "punct"
    word = ""
    pos = 0
    size = len(text)
    while pos < size:
        match = _TOKEN.match(text, pos)
        assert match is not None  # the alternatives cover every character
        kind = match.lastgroup
        token = match.group()
        pos = match.end()
        if kind == "space":
            continue
        if kind == "sq":
            if last_sig in ("", "{", "[", ",", ":"):
                quoted = _SINGLE_QUOTED.match(text, match.start())
                assert quoted is not None
                token, pos, kind = quoted.group(), quoted.end(), "dq"
            else:
                kind = "word"
        if kind == "dq":
            if len(token) < 2 or token[-1] != token[0] or _escaped_end(token):
                return "cut in the middle of a string"
            before_str, last_kind, last_sig, word = last_sig, "str", token[-1], ""
            continue
        if kind == "open":
            stack.extend(token)
            if len(stack) > MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep"
            last_kind, word = "punct", ""
        elif kind == "close":
            del stack[max(0, len(stack) - len(token)) :]
            last_kind, word = "close", ""
        elif kind == "punct":
            last_kind, word = "punct", ""
        else:
            word = word + token if last_kind == "word" else token
            last_kind = "word"
        last_sig = token[-1]
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
    if last_kind == "word" and word in _LITERAL_ENDS:
        return None
    if last_kind == "word":
        return "cut at a value that may be incomplete"
    return "cut in the middle of an object"


def _escaped_end(token: str) -> bool:
    """Whether the closing quote of ``token`` is escaped (an odd run of backslashes before it)."""
    run = len(token) - 1 - len(token[:-1].rstrip("\\"))
    return run % 2 == 1
