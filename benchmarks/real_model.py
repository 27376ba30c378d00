"""9. The real-model suite on the embedded model: every sigform adapter vs DSPy's, and the
40-line grammar script (``--local``; see ``benchmarks/real_suite/``).

Four typed extraction tasks (people, invoices, recipes, a nested event model), 88 held-out
``test`` examples, 3 demos per task, one dedicated ``sigform.local.serve()`` server for every
program, temperature 0, ``max_tokens`` 256. Rows pair each sigform adapter with DSPy's adapter
of the same format; the grammar script and sigform's TwoStepAdapter have no DSPy counterpart.
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import Row, Section

SECTION = "9 real suite"
PAIRS = (("chat", "dspy:chat"), ("json", "dspy:json"), ("xml", "dspy:xml"), ("two-step", None))


def _rows(
    label: str,
    ours: dict[str, Any],
    theirs: dict[str, Any] | None,
    grammar: dict[str, Any] | None,
) -> list[Row]:
    def pick(key: str, scale: float = 1.0) -> tuple[float, float | None]:
        return ours[key] * scale, (theirs[key] * scale if theirs else None)

    n = ours["examples"]
    acc, acc_d = pick("accuracy", 100)
    pf, pf_d = pick("parse_failures")
    tok, tok_d = pick("completion_tokens")
    secs, secs_d = pick("seconds_per_example")
    note = f"grammar script {100 * grammar['accuracy']:.1f}%" if grammar else ""
    return [
        Row(
            SECTION,
            f"{label}: all fields right ({n} examples)",
            "%",
            acc,
            acc_d,
            None,
            ratio_desc="",
            target=">= DSPy",
            met=(acc >= acc_d) if acc_d is not None else None,
            note=note,
        ),
        Row(
            SECTION,
            f"{label}: parse failures",
            "examples",
            pf,
            pf_d,
            None,
            ratio_desc="",
            target="<= DSPy",
            met=(pf <= pf_d) if pf_d is not None else None,
        ),
        Row(SECTION, f"{label}: LM calls", "calls", *pick("calls"), None, ratio_desc=""),
        Row(
            SECTION,
            f"{label}: prompt tokens per call",
            "tokens",
            *pick("prompt_tokens_per_call"),
            None,
            ratio_desc="",
        ),
        Row(
            SECTION,
            f"{label}: completion tokens",
            "tokens",
            tok,
            tok_d,
            (tok_d / tok) if tok_d and tok else None,
        ),
        Row(
            SECTION,
            f"{label}: time per example",
            "s",
            secs,
            secs_d,
            (secs_d / secs) if secs_d and secs else None,
        ),
    ]


def run(with_dspy: bool = True) -> Section:
    from benchmarks.real_suite.run import ALL_PROGRAMS, run_all
    from benchmarks.real_suite.tasks import select

    programs = [p for p in ALL_PROGRAMS if with_dspy or not p.startswith("dspy:")]
    suite = run_all(programs, select(None), split="test")
    totals = {r["program"]: r["total"] for r in suite["results"]}
    grammar = totals.get("grammar")
    section = Section("real_suite")
    for adapter, other in PAIRS:
        section.rows += _rows(
            adapter, totals[f"sigform:{adapter}"], totals.get(other) if other else None, grammar
        )
    if grammar:
        section.rows.append(
            Row(
                SECTION,
                "grammar script (no framework): all fields right",
                "%",
                100 * grammar["accuracy"],
                None,
                None,
                ratio_desc="",
                note=f"{grammar['parse_failures']} parse failures, "
                f"{grammar['completion_tokens']} completion tokens, "
                f"{grammar['seconds_per_example']:.2f} s/example",
            )
        )
    from benchmarks.real_suite.report import markdown

    section.details = {"suite": suite, "table": markdown(suite)}
    return section
