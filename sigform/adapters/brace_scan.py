"""Balanced top-level ``{...}`` spans in LM text, in one linear pass.

A recursive regular expression tried at every ``{`` is quadratic on garbled output (a run of
``{`` that never closes is re-scanned from each of its braces), and small models do write such
runs. This scanner reads the text once: it jumps to the next brace or quote with compiled
searches, takes a run of ``{`` or ``}`` as one step, skips a whole string in one match, and
keeps a stack of open runs. Bound: O(len(text)) time, O(number of brace runs) memory, and at
most ``MAX_TOKENS`` steps (braces, strings) in all: text beyond that is not searched, and the
caller says so (no answer needs that many; a wall of ``"{"{"{`` would cost ~1 µs a step).

Rules: outside any object, quotes are prose; inside one, ``"..."`` strings (with backslash
escapes) hide braces and a backslash escapes the next character. A string that never closes
leaves every object open before it unclosable: they are dropped and the scan goes on after that
quote. The spans returned are the outermost balanced objects, in order. ``loose=True`` ignores
strings (braces only), for text whose quotes are unbalanced prose.
"""

from __future__ import annotations

import regex

from sigform.adapters.recent_scan import RecentScan

__all__ = ["MAX_TOKENS", "Spans", "object_spans"]

MAX_TOKENS = 20_000

# a run of "{", a run of "}", a whole string, an escaped character, or a quote that never closes
_INSIDE = regex.compile(r'\{++|\}++|"(?:[^"\\]++|\\.)*+"|\\.|"', regex.DOTALL)
_INSIDE_LOOSE = regex.compile(r"\{++|\}++")
_MAX_RESTARTS = 4  # fresh scans after an unclosed quote: the bound is (1 + this) * len(text)


class Spans(list):  # type: ignore[type-arg]
    """``(start, end)`` pairs; ``complete`` is False when the scan stopped at ``MAX_TOKENS``."""

    complete = True


def object_spans(text: str, *, loose: bool = False) -> Spans:
    """``(start, end)`` of every outermost balanced ``{...}`` in ``text``, in order (a new list)."""
    found = _recent_loose(text) if loose else _recent_strict(text)
    spans = Spans(found)
    spans.complete = found.complete
    return spans


def _scan(text: str, *, loose: bool) -> Spans:
    inside = _INSIDE_LOOSE if loose else _INSIDE
    steps = MAX_TOKENS
    complete = True
    runs: list[list[int]] = []  # open runs of "{": [position of the run's first brace, braces open]
    closed: list[tuple[int, int]] = []  # per run of "}", the outermost object it closed
    pos = 0
    restarts = _MAX_RESTARTS
    while True:
        if not runs:  # outside every object only an opening brace matters
            pos = text.find("{", pos)
            if pos < 0:
                break
        match = inside.search(text, pos)
        if match is None:
            break
        steps -= 1
        if not steps:
            complete = False
            break
        token = match.group()
        if token[0] == "{":
            runs.append([match.start(), len(token)])
        elif token[0] == "}":
            _close(runs, closed, match.start(), len(token))
        elif token == '"':
            # a string that never closes: nothing open before it can close. Like a fresh scan
            # from the next brace (the quote may be prose), but only a few times: that keeps
            # the scan linear on runs such as `{"{"{"...`
            if restarts:
                restarts -= 1
                pos = runs[0][0] + 1
                runs.clear()
                continue
            runs.clear()
        pos = match.end()
    spans = Spans(_outermost(closed))
    spans.complete = complete
    return spans


# the same answer is often scanned twice (the Chat adapter's JSON reading, then its JSON fallback)
_recent_strict: RecentScan[Spans] = RecentScan(lambda text: _scan(text, loose=False))
_recent_loose: RecentScan[Spans] = RecentScan(lambda text: _scan(text, loose=True))


def _close(runs: list[list[int]], closed: list[tuple[int, int]], start: int, count: int) -> None:
    """``count`` closing braces at ``start`` pop the innermost open braces."""
    used = 0
    outer = -1
    while used < count and runs:
        run = runs[-1]
        take = min(count - used, run[1])
        run[1] -= take
        used += take
        outer = run[0] + run[1]  # the opening brace the last closer used matched
        if run[1] == 0:
            runs.pop()
    if outer >= 0:
        closed.append((outer, start + used))


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans not inside another (balanced spans nest or are disjoint)."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int]] = []
    for begin, end in spans:
        if not out or begin >= out[-1][1]:
            out.append((begin, end))
    return out
