"""9. The real-model suite on the embedded model: every sigform adapter in both modes vs DSPy's,
and the two 40-line scripts (``--local``; see ``benchmarks/real_suite/``).

Four typed extraction tasks (people, invoices, recipes, a nested event model), 88 held-out
``test`` examples, 3 demos per task, one dedicated ``sigform.local.serve()`` server for every
program, temperature 0, ``max_tokens`` 256. The embedded model is a base model: ``@text`` rows
send one plain-text few-shot document to text completions, ``@chat`` rows go through the chat
template. Rows pair each sigform adapter and mode with DSPy's adapter of the same format and
mode (DSPy's ``model_type="text"`` LM for ``@text``); the default (``auto``, the detected mode)
is shown against the plain completion script and yesterday's default (``auto@chat``); TwoStep has
no DSPy counterpart.
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import Row, Section

SECTION = "9 real suite"
PAIRS = (
    ("auto", None),
    ("auto@chat", None),
    *(
        (f"{a}@{mode}", f"dspy:{a}{'@text' if mode == 'text' else ''}")
        for a in ("chat", "json", "xml")
        for mode in ("text", "chat")
    ),
    ("two-step@text", None),
    ("two-step@chat", None),
)


def _rows(
    label: str,
    ours: dict[str, Any],
    theirs: dict[str, Any] | None,
    totals: dict[str, dict[str, Any]],
) -> list[Row]:
    def pick(key: str, scale: float = 1.0) -> tuple[float, float | None]:
        return ours[key] * scale, (theirs[key] * scale if theirs else None)

    n = ours["examples"]
    acc, acc_d = pick("accuracy", 100)
    pf, pf_d = pick("parse_failures")
    tok, tok_d = pick("completion_tokens")
    secs, secs_d = pick("seconds_per_example")
    # the default's yardsticks: the plain completion script and yesterday's default
    yardsticks = ("completion", "sigform:auto@chat") if label == "auto" else ("grammar",)
    note = ", ".join(
        f"{name.removeprefix('sigform:')} {100 * totals[name]['accuracy']:.1f}%"
        for name in yardsticks
        if name in totals
    )
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
    from benchmarks.real_suite.run import LOCAL_PROGRAMS, run_all
    from benchmarks.real_suite.tasks import select

    programs = [p for p in LOCAL_PROGRAMS if with_dspy or not p.startswith("dspy:")]
    suite = run_all(programs, select(None), split="test")
    totals = {r["program"]: r["total"] for r in suite["results"]}
    section = Section("real_suite")
    for adapter, other in PAIRS:
        section.rows += _rows(
            adapter, totals[f"sigform:{adapter}"], totals.get(other) if other else None, totals
        )
    for name, label in (("completion", "completion script"), ("grammar", "grammar script (chat)")):
        script = totals.get(name)
        if script:
            section.rows.append(
                Row(
                    SECTION,
                    f"{label} (no framework): all fields right",
                    "%",
                    100 * script["accuracy"],
                    None,
                    None,
                    ratio_desc="",
                    note=f"{script['parse_failures']} parse failures, "
                    f"{script['completion_tokens']} completion tokens, "
                    f"{script['seconds_per_example']:.2f} s/example",
                )
            )
    from benchmarks.real_suite.report import markdown

    section.details = {"suite": suite, "table": markdown(suite)}
    return section
