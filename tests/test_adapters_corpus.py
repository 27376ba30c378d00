"""The shared parse corpus through the matching adapter's parse: >= 97% right, zero silent failures.

Each case's ``format`` picks the adapter (chat -> ChatAdapter, json -> JSONAdapter, xml ->
XMLAdapter); the completion may be in another format (format confusion). Outcomes per the
corpus README: correct / missed / WRONG / rejected / ACCEPT. WRONG and ACCEPT must be zero.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from sigform import ChatAdapter, JSONAdapter, XMLAdapter
from sigform.errors import ParseError
from sigform.signatures import InputField, OutputField, make_signature

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parse-corpus"
ADAPTERS = {"chat": ChatAdapter(), "json": JSONAdapter(), "xml": XMLAdapter()}

pytestmark = pytest.mark.skipif(not (CORPUS / "cases.jsonl").exists(), reason="parse corpus not present")


def _load() -> tuple[Any, list[dict[str, Any]]]:
    spec = importlib.util.spec_from_file_location("parse_corpus_types", CORPUS / "types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    with open(CORPUS / "cases.jsonl", encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh if line.strip()]
    return module, cases


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return _plain(value.model_dump())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return float(got) == float(want)
    if isinstance(got, str) and isinstance(want, str):
        return got.strip() == want.strip()
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want, strict=True))
    return got == want


def run_corpus() -> tuple[dict[str, Counter[str]], list[tuple[str, str, str]]]:
    types_module, cases = _load()
    tallies: dict[str, Counter[str]] = {fmt: Counter() for fmt in ADAPTERS}
    notes: list[tuple[str, str, str]] = []
    for case in cases:
        outputs = types_module.outputs_spec(case)
        fields = {"text": (str, InputField())}
        fields.update({name: (ann, OutputField()) for name, ann in outputs.items()})
        signature = make_signature(fields)
        adapter = ADAPTERS[case["format"]]
        try:
            got = adapter.parse(signature, case["completion"])
        except ParseError as exc:
            outcome = "rejected" if case.get("expect_error") else "missed"
            detail = str(exc).splitlines()[0] + " | " + "; ".join(str(e) for e in exc.errors)[:300]
        else:
            if case.get("expect_error"):
                outcome, detail = "ACCEPT", repr(got)
            else:
                want = {k: TypeAdapter(ann).validate_python(case["expect"][k]) for k, ann in outputs.items()}
                ok = list(got) == list(want) and all(_same(_plain(got[k]), _plain(want[k])) for k in want)
                outcome, detail = ("correct", "") if ok else ("WRONG", f"got {_plain(got)!r}")
        tallies[case["format"]][outcome] += 1
        if outcome in ("missed", "WRONG", "ACCEPT"):
            notes.append((case["id"], outcome, detail))
    return tallies, notes


def test_parse_corpus_figures() -> None:
    tallies, notes = run_corpus()
    total_right = total = 0
    print()
    for fmt, tally in tallies.items():
        right = tally["correct"] + tally["rejected"]
        n = sum(tally.values())
        total_right += right
        total += n
        print(
            f"corpus {fmt:5s}: {right}/{n} right ({100 * right / n:.1f}%)  correct={tally['correct']} "
            f"missed={tally['missed']} WRONG={tally['WRONG']} rejected={tally['rejected']} "
            f"ACCEPT={tally['ACCEPT']}"
        )
    print(f"corpus total: {total_right}/{total} ({100 * total_right / total:.1f}%)")
    for case_id, outcome, detail in notes:
        print(f"  {outcome:7s} {case_id}: {detail}")
    silent = [n for n in notes if n[1] in ("WRONG", "ACCEPT")]
    assert not silent, f"silently wrong values: {silent}"
    assert total_right / total >= 0.97
