"""Grading shared by the parse-corpus tests: load cases, run them through the adapters, tally.

Outcomes follow the corpus README: ``correct`` / ``missed`` (raised where a value was expected)
/ ``WRONG`` (a wrong value came back) / ``rejected`` (raised on a ``fail`` case, which is right)
/ ``ACCEPT`` (a value came back on a ``fail`` case). WRONG and ACCEPT are the silent failures.
Enums compare by value, models by ``model_dump()``, a bool never equals a number, ints and
floats compare numerically, strings after stripping.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sigform import ChatAdapter, JSONAdapter, XMLAdapter
from sigform.errors import ParseError
from sigform.signatures import InputField, OutputField, make_signature
from sigform.testing import corpus
from sigform.testing.corpus import load_cases  # noqa: F401 - the corpus tests import it from here

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parse-corpus"
# a clone on its own has no corpus beside it: the corpus tests skip there, saying so
CORPUS_ABSENT = not (CORPUS / "cases.jsonl").exists() or not (CORPUS / "types.py").exists()
CORPUS_SKIP_REASON = (
    f"the shared parse corpus is not beside this clone ({CORPUS} is absent); these tests run in the "
    "development checkout and in CI, where it is"
)
ADAPTERS = {"chat": ChatAdapter(), "json": JSONAdapter(), "xml": XMLAdapter()}

Tallies = dict[str, Counter[str]]
Notes = list[tuple[str, str, str]]


def load_types() -> Any:
    """The corpus's ``types.py`` loaded by path; the held-out cases also name ``date``."""
    module = corpus.load_types(CORPUS)
    module.NAMESPACE.setdefault("date", datetime.date)
    return module


def signature_for(outputs: dict[str, Any]) -> Any:
    fields: dict[str, Any] = {"text": (str, InputField())}
    fields.update({name: (ann, OutputField()) for name, ann in outputs.items()})
    return make_signature(fields)


def grade(case: dict[str, Any], types_module: Any) -> tuple[str, str]:
    """``(outcome, detail)`` of one case through the adapter its ``format`` names."""
    adapter = ADAPTERS[case["format"]]
    try:
        got = adapter.parse(signature_for(types_module.outputs_spec(case)), case["completion"])
    except ParseError as exc:
        detail = str(exc).splitlines()[0] + " | " + "; ".join(str(e) for e in exc.errors)[:300]
        return corpus.outcome(case, types_module, None), detail
    result = corpus.outcome(case, types_module, got)
    return result, "" if result == "correct" else f"got {corpus.plain(got)!r}"


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
