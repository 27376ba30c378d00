"""3. Format and parse time per call, per adapter (Chat, JSON, XML), small and large signatures.

small: ``question -> answer``, measured twice: with 3 demos (what a compiled program sends,
the case the targets are about) and without demos; large: 6 inputs, 6 typed outputs (a nested model, a list, a
Literal, a float, an int, a str) and 3 demos -- the cases of ``benchmarks.adapters_speed``,
whose ``bench_sigform`` measures sigform's side. DSPy's side (``dspy_side/format_parse.py``)
declares the same signatures and gets the same demos, inputs and outputs as JSON. Each parser
parses its own adapter's rendering of the expected outputs (checked to round-trip) and the
medians are over ``repeats`` calls after one warm-up.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from benchmarks.adapters_speed import SIZE_LABELS, SIZES, bench_sigform, case
from benchmarks.common import Row, Section, median, paired_ratio, profile_top, run_dspy

ADAPTERS = ("chat", "json", "xml")
# (adapter, size) -> the target ratio (DSPy / sigform of format+parse)
TARGETS = {("chat", "small_demos"): 10.0, ("chat", "small"): 10.0, ("json", "large"): 5.0}


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in values.items()}


def cases_json() -> str:
    """The small and large cases (demos, inputs, outputs) as JSON for the DSPy side."""
    out = {}
    for size in SIZES:
        _, demos, inputs, outputs = case(size)
        out[size] = {"demos": [_plain(d) for d in demos], "inputs": inputs, "outputs": _plain(outputs)}
    return json.dumps(out)


def _median_of(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    if not rounds:
        return {}
    first = rounds[0]
    return {key: {part: median([r[key][part] for r in rounds]) for part in first[key]} for key in first}


def run(repeats: int = 300, rounds: int = 3, with_dspy: bool = True) -> Section:
    """Alternate rounds of sigform (this process) and DSPy (a child per round); medians of rounds."""
    section = Section("format_parse")
    ours_rounds: list[dict[str, dict[str, float]]] = []
    theirs_rounds: list[dict[str, dict[str, float]]] = []
    for _ in range(rounds):
        ours_rounds.append({f"{a}/{s}": bench_sigform(a, s, repeats) for a in ADAPTERS for s in SIZES})
        if with_dspy:
            theirs_rounds.append(run_dspy("format_parse.py", str(repeats), stdin=cases_json()))
    ours, theirs = _median_of(ours_rounds), _median_of(theirs_rounds)
    for key, mine in ours.items():
        adapter, size = key.split("/")
        other = theirs.get(key, {})
        target = TARGETS.get((adapter, size))
        for part in ("format_us", "parse_us", "total_us"):
            ratio = None
            if theirs_rounds:
                per_round = [r[key][part] for r in theirs_rounds]
                ratio = paired_ratio(per_round, [r[key][part] for r in ours_rounds])
            is_total = part == "total_us"
            what = part[:-3].replace("total", "format+parse")
            section.rows.append(Row(
                "3 format+parse", f"{adapter} {SIZE_LABELS[size]}: {what}", "µs",
                mine[part], other.get(part), ratio,
                target=f">= {target:g}x faster" if (target and is_total) else "",
                met=(ratio >= target) if (target and is_total and ratio is not None) else None,
            ))
    section.details = {"sigform": ours, "dspy": theirs, "repeats": repeats, "rounds": rounds}
    for row in section.rows:
        if row.met is False:
            adapter, label = row.metric.split(":")[0].split(" ", 1)
            size = next(k for k, v in SIZE_LABELS.items() if v == label)
            section.details[f"sigform_{adapter}_{size}_profile"] = profile_case(adapter, size)
    return section


def profile_case(adapter_name: str, size: str, calls: int = 3000) -> str:
    """Top cumulative entries of sigform's format then parse for one case (a missed target)."""
    from benchmarks.adapters_speed import ADAPTERS as CLASSES

    adapter = CLASSES[adapter_name]()
    signature, demos, inputs, outputs = case(size)
    completion = adapter.format_assistant(signature, outputs)
    fmt = profile_top(lambda: adapter.format(signature, demos, inputs), calls=calls, top=14)
    parse = profile_top(lambda: adapter.parse(signature, completion), calls=calls, top=14)
    return f"format, {calls} calls:\n{fmt}\n\nparse, {calls} calls:\n{parse}"
