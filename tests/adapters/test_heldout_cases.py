"""Held-out parse cases (tests/adapters/heldout_cases.jsonl) through the matching adapter's parse.

Written apart from the development corpus, in its format and following its README's stances,
with other topics, values, field names, wordings, header variants, JSON damage, XML quirks,
list styles and failure kinds, so that parsers tuned on the corpus are checked for
generalisation. Same grading as ``test_adapters_corpus.py``: >= 97% right, zero WRONG/ACCEPT.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from corpus_grading import (
    CORPUS,
    CORPUS_ABSENT,
    CORPUS_SKIP_REASON,
    load_cases,
    load_types,
    report_and_check,
    run_cases,
)

HELDOUT = Path(__file__).with_name("heldout_cases.jsonl")

pytestmark = pytest.mark.skipif(CORPUS_ABSENT, reason=CORPUS_SKIP_REASON)


def test_heldout_figures() -> None:
    tallies, notes = run_cases(load_cases(HELDOUT), load_types())
    report_and_check("held-out", tallies, notes)


def test_heldout_covers_every_corpus_category_per_format() -> None:
    """Every (format, category) pair of the development corpus has held-out cases too."""
    dev = {(c["format"], c["category"]) for c in load_cases(CORPUS / "cases.jsonl")}
    held = Counter((c["format"], c["category"]) for c in load_cases(HELDOUT))
    assert not dev - set(held), sorted(dev - set(held))


def test_heldout_cases_are_well_formed() -> None:
    types_module = load_types()
    cases = load_cases(HELDOUT)
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    for case in cases:
        assert case["id"].startswith(f"held-{case['format']}-")
        assert ("expect" in case) != bool(case.get("expect_error"))
        assert (case["group"] == "fail") == bool(case.get("expect_error")), case["id"]
        outputs = types_module.outputs_spec(case)
        if "expect" in case:
            assert list(case["expect"]) == list(outputs), case["id"]
