"""The shared parse corpus through the matching adapter's parse: >= 97% right, zero silent failures.

Each case's ``format`` picks the adapter (chat -> ChatAdapter, json -> JSONAdapter, xml ->
XMLAdapter); the completion may be in another format (format confusion). Outcomes per the
corpus README (see ``tests/corpus_grading.py``): correct / missed / WRONG / rejected / ACCEPT.
WRONG and ACCEPT must be zero.
"""

from __future__ import annotations

import pytest
from corpus_grading import (
    CORPUS,
    CORPUS_ABSENT,
    CORPUS_SKIP_REASON,
    Notes,
    Tallies,
    load_cases,
    load_types,
    report_and_check,
    run_cases,
)

pytestmark = pytest.mark.skipif(CORPUS_ABSENT, reason=CORPUS_SKIP_REASON)


def run_corpus() -> tuple[Tallies, Notes]:
    return run_cases(load_cases(CORPUS / "cases.jsonl"), load_types())


def test_parse_corpus_figures() -> None:
    tallies, notes = run_corpus()
    report_and_check("corpus", tallies, notes)
