"""Grading shared by the parse-corpus tests: load cases, run them through the adapters, tally.

Outcomes follow the corpus README: ``correct`` / ``missed`` (raised where a value was expected)
/ ``WRONG`` (a wrong value came back) / ``rejected`` (raised on a ``fail`` case, which is right)
/ ``ACCEPT`` (a value came back on a ``fail`` case). WRONG and ACCEPT are the silent failures.
Enums compare by value, models by ``model_dump()``, a bool never equals a number, ints and
floats compare numerically, strings after stripping.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from sigform import ChatAdapter, JSONAdapter, XMLAdapter
from sigform.errors import ParseError
from sigform.signatures import InputField, OutputField, make_signature

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parse-corpus"
ADAPTERS = {"chat": ChatAdapter(), "json": JSONAdapter(), "xml": XMLAdapter()}

Tallies = dict[str, Counter[str]]
Notes = list[tuple[str, str, str]]


def load_types() -> Any:
    """The corpus's ``types.py`` loaded by path (never as ``types``, the stdlib module)."""
    spec = importlib.util.spec_from_file_location("parse_corpus_types", CORPUS / "types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_cases(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def plain(value: Any) -> Any:
    """Enums as their values, models as their dumps, containers recursively."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return float(got) == float(want)
    if isinstance(got, str) and isinstance(want, str):
        return got.strip() == want.strip()
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b) for a, b in zip(got, want, strict=True))
    return got == want


def signature_for(outputs: dict[str, Any]) -> Any:
    fields: dict[str, Any] = {"text": (str, InputField())}
    fields.update({name: (ann, OutputField()) for name, ann in outputs.items()})
    return make_signature(fields)


def grade(case: dict[str, Any], types_module: Any) -> tuple[str, str]:
    """``(outcome, detail)`` of one case through the adapter its ``format`` names."""
    outputs = types_module.outputs_spec(case)
    adapter = ADAPTERS[case["format"]]
    try:
        got = adapter.parse(signature_for(outputs), case["completion"])
    except ParseError as exc:
        outcome = "rejected" if case.get("expect_error") else "missed"
        return outcome, str(exc).splitlines()[0] + " | " + "; ".join(str(e) for e in exc.errors)[:300]
    if case.get("expect_error"):
        return "ACCEPT", repr(got)
    want = {k: TypeAdapter(ann).validate_python(case["expect"][k]) for k, ann in outputs.items()}
    ok = list(got) == list(want) and all(same(plain(got[k]), plain(want[k])) for k in want)
    return ("correct", "") if ok else ("WRONG", f"got {plain(got)!r}")


def run_cases(cases: Iterable[dict[str, Any]], types_module: Any) -> tuple[Tallies, Notes]:
    tallies: Tallies = {fmt: Counter() for fmt in ADAPTERS}
    notes: Notes = []
    for case in cases:
        outcome, detail = grade(case, types_module)
        tallies[case["format"]][outcome] += 1
        if outcome in ("missed", "WRONG", "ACCEPT"):
            notes.append((case["id"], outcome, detail))
    return tallies, notes


def report_and_check(label: str, tallies: Tallies, notes: Notes, *, min_right: float = 0.97) -> None:
    """Print per-format figures and every miss; assert no silent failure and ``min_right``."""
    total_right = total = 0
    print()
    for fmt, tally in tallies.items():
        right = tally["correct"] + tally["rejected"]
        n = sum(tally.values())
        total_right += right
        total += n
        share = 100 * right / max(n, 1)
        print(
            f"{label} {fmt:5s}: {right}/{n} right ({share:.1f}%)  correct={tally['correct']} "
            f"missed={tally['missed']} WRONG={tally['WRONG']} rejected={tally['rejected']} "
            f"ACCEPT={tally['ACCEPT']}"
        )
    print(f"{label} total: {total_right}/{total} ({100 * total_right / max(total, 1):.1f}%)")
    for case_id, outcome, detail in notes:
        print(f"  {outcome:7s} {case_id}: {detail}")
    silent = [n for n in notes if n[1] in ("WRONG", "ACCEPT")]
    assert not silent, f"silently wrong values: {silent}"
    assert total and total_right / total >= min_right
