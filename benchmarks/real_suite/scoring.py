"""Grading a program's answer against an example's labels (the same rules for every program).

An example is right when every output field is right. Strings compare without case, surrounding
whitespace, quotes or trailing punctuation, and without a leading "the" (``The Lindenhof Inn`` is
``Lindenhof Inn``); a field may list other acceptable strings in the example's ``also``. Numbers
compare within half a cent, and a bool is never a number. Lists of strings (ingredients) compare
as multisets with a plural ``s`` (``es`` after an ``o``) ignored, since the order of ingredients
carries no meaning.
Dates compare as ISO text. ``None`` (not stated) matches only ``None``. Nested models compare
field by field.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

_SPACES = re.compile(r"\s+")
_EDGE = " \t\n\"'`.,;:"


def norm_text(text: str) -> str:
    out = _SPACES.sub(" ", text).strip(_EDGE).casefold()
    return out[4:] if out.startswith("the ") else out


def _item(text: str) -> str:
    out = norm_text(text)
    if out.endswith("oes"):  # tomatoes, potatoes
        return out[:-2]
    return out[:-1] if out.endswith("s") else out


def value_right(got: Any, want: Any, also: list[Any] | None = None) -> bool:
    """Whether ``got`` (plain JSON, see ``tasks.to_plain``) matches the label ``want``."""
    if also and any(value_right(got, alt) for alt in also):
        return True
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and abs(float(got) - float(want)) < 0.005
    if isinstance(want, str):
        return isinstance(got, str) and norm_text(got) == norm_text(want)
    if isinstance(want, list):
        if not isinstance(got, list) or not all(isinstance(g, str) for g in got):
            return False
        return Counter(_item(g) for g in got) == Counter(_item(w) for w in want)
    if isinstance(want, dict):
        return isinstance(got, dict) and all(value_right(got.get(k), v) for k, v in want.items())
    return bool(got == want)


def fields_right(got: dict[str, Any], example: dict[str, Any]) -> dict[str, bool]:
    """Per output field of ``example``, whether ``got`` has it right."""
    also = example.get("also") or {}
    return {
        name: value_right(got.get(name), want, also.get(name)) for name, want in example["expect"].items()
    }


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over per-example records (each with ``right``, ``fields``, ``error``, ``calls``,
    ``prompt_tokens``, ``completion_tokens`` and ``seconds``)."""
    n = len(records)
    fields = [ok for r in records for ok in (r.get("fields") or {}).values()]
    field_total = sum(len(r["expect_fields"]) for r in records)
    out = {
        "examples": n,
        "right": sum(bool(r.get("right")) for r in records),
        "parse_failures": sum(1 for r in records if r.get("error")),
        "calls": sum(r.get("calls", 0) for r in records),
        "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in records),
        "completion_tokens": sum(r.get("completion_tokens", 0) for r in records),
        "seconds": round(sum(r.get("seconds", 0.0) for r in records), 2),
        "fields_right": sum(fields),
        "fields_total": field_total,
    }
    out["accuracy"] = out["right"] / n if n else 0.0
    out["field_accuracy"] = out["fields_right"] / field_total if field_total else 0.0
    out["seconds_per_example"] = out["seconds"] / n if n else 0.0
    # the median resists the other processes of a shared machine better than the mean
    out["median_seconds"] = round(statistics.median(r.get("seconds", 0.0) for r in records), 2) if n else 0.0
    out["prompt_tokens_per_call"] = out["prompt_tokens"] / out["calls"] if out["calls"] else 0.0
    return out
