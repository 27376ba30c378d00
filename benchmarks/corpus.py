"""7. Parse robustness on the shared parse corpus (``../shared/parse-corpus/``), sigform vs DSPy.

Every case is parsed by the adapter its ``format`` names (chat/json/xml) in both frameworks
(DSPy's ChatAdapter without its JSON fallback, which is a second LM call, not a parse). Both
sides' results go through the same JSON round trip and are graded by the same rules (those of
the corpus README): ``correct``; ``missed`` (raised where a value was expected); ``WRONG`` (a
wrong value came back); ``rejected`` (raised on a must-fail case, which is right); ``ACCEPT``
(returned a value on a must-fail case). WRONG + ACCEPT are the silently wrong values.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, Row, Section, run_dspy
from sigform.testing import corpus

CORPUS = ROOT.parent / "shared" / "parse-corpus"
OUTCOMES = corpus.OUTCOMES


def load(folder: Path = CORPUS) -> tuple[Any, list[dict[str, Any]]]:
    return corpus.load_types(folder), corpus.load_cases(folder / "cases.jsonl")


def sigform_results(types_module: Any, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per case id: ``{"value": plain JSON}`` or ``{"error": "..."}`` from sigform's adapters."""
    from sigform import ChatAdapter, JSONAdapter, XMLAdapter
    from sigform.signatures import InputField, OutputField, make_signature

    adapters = {"chat": ChatAdapter(), "json": JSONAdapter(), "xml": XMLAdapter()}
    results: dict[str, dict[str, Any]] = {}
    for case in cases:
        outputs = types_module.outputs_spec(case)
        fields: dict[str, Any] = {"text": (str, InputField())}
        fields.update({name: (ann, OutputField()) for name, ann in outputs.items()})
        try:
            got = adapters[case["format"]].parse(make_signature(fields), case["completion"])
            results[case["id"]] = {"value": json.loads(json.dumps(corpus.plain(dict(got)), default=str))}
        except Exception as exc:  # every failure to produce a value counts as an error
            results[case["id"]] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return results


def grade(
    types_module: Any, cases: list[dict[str, Any]], results: dict[str, dict[str, Any]]
) -> tuple[Counter[str], list[dict[str, str]]]:
    """Tally both frameworks' results by the same rules (``sigform.testing.corpus``)."""
    tally: Counter[str] = Counter()
    silent: list[dict[str, str]] = []
    for case in cases:
        res = results[case["id"]]
        result = corpus.outcome(case, types_module, None if "error" in res else res["value"])
        tally[result] += 1
        if result in corpus.SILENT:
            silent.append({"id": case["id"], "outcome": result, "got": json.dumps(res.get("value"))[:300]})
    return tally, silent


def run(with_dspy: bool = True, corpus: Path = CORPUS) -> Section:
    section = Section("corpus")
    if not (corpus / "cases.jsonl").exists():
        section.details = {"skipped": f"no corpus at {corpus}"}
        return section
    types_module, cases = load(corpus)
    mine, mine_silent = grade(types_module, cases, sigform_results(types_module, cases))
    theirs: Counter[str] | None = None
    theirs_silent: list[dict[str, str]] = []
    if with_dspy:
        theirs, theirs_silent = grade(types_module, cases, run_dspy("corpus.py", str(corpus)))
    n = len(cases)
    for outcome in OUTCOMES:
        section.rows.append(
            Row(
                "7 parse corpus",
                f"{outcome} (of {n})",
                "cases",
                mine[outcome],
                theirs[outcome] if theirs is not None else None,
                None,
                ratio_desc="",
            )
        )
    right = mine["correct"] + mine["rejected"]
    right_theirs = 100 * (theirs["correct"] + theirs["rejected"]) / n if theirs is not None else None
    section.rows.append(
        Row(
            "7 parse corpus",
            "right (correct + rejected)",
            "%",
            100 * right / n,
            right_theirs,
            None,
            ratio_desc="",
        )
    )
    silent = mine["WRONG"] + mine["ACCEPT"]
    section.rows.append(
        Row(
            "7 parse corpus",
            "silently wrong (WRONG + ACCEPT)",
            "cases",
            silent,
            theirs["WRONG"] + theirs["ACCEPT"] if theirs is not None else None,
            None,
            ratio_desc="",
            target="0",
            met=silent == 0,
        )
    )
    section.details = {
        "sigform": dict(mine),
        "dspy": dict(theirs) if theirs is not None else None,
        "sigform_silent": mine_silent,
        "dspy_silent": theirs_silent,
        "cases": n,
    }
    return section
