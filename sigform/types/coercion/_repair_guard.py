"""Keeping json-repair honest: it must never drop or rewrite what the model wrote.

json-repair reads a bare value only as far as it looks like JSON: ``"n": 1 000 000`` becomes
``1``, ``12 or 13`` becomes ``12``, ``+-5`` becomes ``-5``, ``"a" "b"`` becomes ``"a"``,
``5 apples`` becomes ``5``, ``3%`` becomes ``3``. Each is a silently wrong value. So, before the
repair, every bare (unquoted) value in the text is checked:

* a JSON literal (``true``, ``None`` ...) or one clean number is left as it is;
* digits grouped by single spaces in threes after a key (``1 000 000``) are one number, written
  without the spaces (in a list the same text could be several numbers: it becomes text);
* anything else that starts like a number (``12 or 13``, ``+-5``, ``$5``, ``3%``, ``2e``) is
  quoted, so the whole text reaches the field's own type, which reads it or refuses it;
* words are left to json-repair (``Paris`` -> ``"Paris"``).

After the repair, what it returned is compared with the source: every word and every number
written outside comments must still be there. A repair that lost one is refused. The pass is one
linear scan (json-repair itself only runs on bounded text, see ``MAX_REPAIR_CHARS``).
"""

from __future__ import annotations

import json

import regex

from sigform.types.coercion._plan import Invalid

__all__ = ["check_repair", "guard_bare_values"]

_TOKEN = regex.compile(
    r"""(?P<comment>//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/|\Z))
    |(?P<dq>"(?:[^"\\]++|\\.)*+(?:"|\Z))
    |(?P<sq>'(?:[^'\\\n]++|\\.)*+(?:'|\Z))
    |(?P<delim>[{}\[\],:])
    |(?P<space>\s++)
    |(?P<bare>(?:[^\s{}\[\],:"/]|/(?![/*]))++(?:[ \t\u00a0\u202f]++(?:[^\s{}\[\],:"/]|/(?![/*]))++)*+)""",
    regex.VERBOSE | regex.DOTALL,
)
_LITERALS = {"true": "true", "false": "false", "null": "null", "none": "null"}
_CLEAN_NUMBER = regex.compile(r"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?")
_SPACED_THOUSANDS = regex.compile(r"([-+]?)(\d{1,3}(?:[ \u00a0\u202f]\d{3})++)(\.\d++)?")
_NUMBERISH = regex.compile(r"[-+\u2212.$€£¥\d]|.*%\Z", regex.DOTALL)
_WORD = regex.compile(r"\w++")
_STARTS = ("", "{", "[", ",", ":")


class Source:
    """What the model wrote outside comments: its words and numbers (the repair must keep them)."""

    def __init__(self) -> None:
        self.words: set[str] = set()
        self.numbers: dict[str, float] = {}  # as written -> value

    def add_text(self, text: str) -> None:
        self.words.update(w.lower() for w in _WORD.findall(text))


def _decode(token: str) -> str:
    """The content of a quoted string token (escapes decoded where they are valid)."""
    inner = token[1:-1] if len(token) >= 2 and token[-1] == token[0] else token[1:]
    if "\\" not in inner:
        return inner
    try:
        return json.loads(f'"{inner}"') if token[0] == '"' else inner
    except ValueError:
        return inner


def guard_bare_values(text: str) -> tuple[str, Source]:
    """``text`` with its bare values made safe to repair (see the module docs), and its content."""
    source = Source()
    pieces: list[str] = []
    last = ""  # the last delimiter or "str"/"bare" before this token
    pos = 0
    single: tuple[int, int, str] | None = None  # the last single-quoted string: start, end, content
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        token = match.group()
        if kind == "comment":
            pieces.append(text[pos : match.start()])
            pos = match.end()
            continue
        if kind == "space":
            continue
        if kind == "sq" and last not in _STARTS:
            kind = "bare"  # an apostrophe inside a bare value
        if kind == "bare" and single is not None and single[1] == match.start() and token.endswith("'"):
            # 'it's': the apostrophe is inside the text (json-repair would read "it's'")
            content = single[2] + "'" + token[:-1]
            pieces.append(text[pos : single[0]])
            pieces.append(json.dumps(content, ensure_ascii=False))
            pos = match.end()
            source.add_text(content)
            single, last = None, "str"
            continue
        single = None
        if kind in ("dq", "sq"):
            source.add_text(_decode(token))
            if kind == "sq":
                single = (match.start(), match.end(), _decode(token))
            last = "str"
        elif kind == "delim":
            last = token
        else:
            replacement = _bare(token, last, source)
            if replacement is not None:
                pieces.append(text[pos : match.start()])
                pieces.append(replacement)
                pos = match.end()
            last = "bare"
    pieces.append(text[pos:])
    return "".join(pieces), source


def _bare(token: str, before: str, source: Source) -> str | None:
    """What to write in place of one bare value (``None``: keep it)."""
    literal = _LITERALS.get(token.lower())
    if literal is not None:
        source.words.add(literal)
        return None
    if _CLEAN_NUMBER.fullmatch(token):
        source.numbers[token] = float(token)
        return None
    spaced = _SPACED_THOUSANDS.fullmatch(token)
    if spaced is not None and before == ":":  # `"n": 1 000 000` is one number
        number = spaced.group(1) + regex.sub(r"\D", "", spaced.group(2)) + (spaced.group(3) or "")
        source.numbers[token] = float(number)
        return number
    source.add_text(token)
    if before in ("[", ",") and _NUMBERISH.match(token) and regex.search(r"\d\s+\d", token):
        raise Invalid(f"{token!r} in a list may be one number or several; separate items with commas")
    if _NUMBERISH.match(token):
        return json.dumps(token, ensure_ascii=False)  # the field's type reads (or refuses) it whole
    return None


def check_repair(value: object, source: Source) -> None:
    """Raise :class:`Invalid` when the repaired ``value`` lost a word or a number of ``source``."""
    words: set[str] = set()
    numbers: set[float] = set()
    merged: list[str] = []  # keys json-repair glued together out of several tokens
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                words.update(w.lower() for w in _WORD.findall(str(key)))
                if '"' in str(key):
                    merged.append(str(key))
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, bool):
            words.add("true" if item else "false")
        elif item is None:
            words.add("null")
        elif isinstance(item, (int, float)):
            numbers.add(float(item))
        elif isinstance(item, str):
            words.update(w.lower() for w in _WORD.findall(item))
    lost = sorted(source.words - words)[:5]
    for written, number in source.numbers.items():
        # kept as a number, or as text (json-repair keeps `1,000` as the string "1,000")
        if number not in numbers and not words.issuperset(w.lower() for w in _WORD.findall(written)):
            lost.append(written)
    lost = (lost + [repr(k) for k in merged])[:5]
    if lost:
        raise Invalid(
            "the value is not valid JSON, and repairing it would drop or change part of it "
            f"({', '.join(lost)}); write each value as one JSON value (quote text)"
        )
