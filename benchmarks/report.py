"""The comparison table: printed to the terminal (rich), written as JSON and Markdown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Section

COLUMNS = ("measurement", "metric", "unit", "sigform", "DSPy 3.4.1", "ratio", "ratio is", "target", "met")
NUMERIC = ("sigform", "DSPy 3.4.1", "ratio")


def fmt_value(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value)}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def fmt_met(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "NO")


def cells(row: Row) -> list[str]:
    return [
        row.section, row.metric + (f" ({row.note})" if row.note else ""), row.unit, fmt_value(row.sigform),
        fmt_value(row.dspy), fmt_ratio(row.ratio), row.ratio_desc if row.ratio is not None else "",
        row.target, fmt_met(row.met),
    ]


def all_rows(sections: Sequence[Section]) -> list[Row]:
    return [row for section in sections for row in section.rows]


def profiles(sections: Sequence[Section]) -> dict[str, str]:
    """Every profile a measurement attached (the slow paths where sigform missed a target)."""
    return {
        f"{section.name}: {key}": value
        for section in sections
        for key, value in section.details.items()
        if "profile" in key and isinstance(value, str)
    }


def print_table(sections: Sequence[Section]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="sigform vs DSPy 3.4.1 (same run, same machine; medians)", show_lines=False)
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in NUMERIC else "left")
    for row in all_rows(sections):
        style = "red" if row.met is False else ("green" if row.met else None)
        table.add_row(*cells(row), style=style)
    Console(width=200).print(table)


def markdown(sections: Sequence[Section], meta: dict[str, Any]) -> str:
    lines = [
        "# sigform vs DSPy 3.4.1",
        "",
        f"Run {meta.get('finished', '')} on {meta.get('machine', '')}. Medians; ratios are the headline "
        "(both sides measured in the same run).",
        "Reproduce: `python -m benchmarks` (see benchmarks/README.md).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---:" if c in NUMERIC else "---" for c in COLUMNS) + " |",
    ]
    for row in all_rows(sections):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells(row)) + " |")
    met = [r for r in all_rows(sections) if r.met is not None]
    lines += ["", f"Targets met: {sum(bool(r.met) for r in met)} of {len(met)}."]
    missed = [r for r in met if not r.met]
    if missed:
        lines += ["", "Missed:"] + [f"- {r.section}: {r.metric} ({r.target})" for r in missed]
    errors = {s.name: s.details["error"] for s in sections if "error" in s.details}
    if errors:
        lines += ["", "## Measurements that failed to run", ""]
        lines += [f"- {name}: `{error}`" for name, error in errors.items()]
    tables = {s.name: s.details["table"] for s in sections if isinstance(s.details.get("table"), str)}
    for name, table in tables.items():  # a measurement's own, more detailed table
        lines += ["", f"## {name}", "", table.removeprefix("# ").split("\n", 1)[-1].strip()]
    profs = profiles(sections)
    if profs:
        lines += ["", "## Profiles of slow paths (top cumulative entries)", ""]
        for name, text in profs.items():
            lines += [f"### {name}", "", "```", text, "```", ""]
    lines += ["", "## Environment", "", "```", json.dumps(meta, indent=2), "```", ""]
    return "\n".join(lines)


def write(sections: Sequence[Section], meta: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.md`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "meta": meta,
        "rows": [row.as_dict() for row in all_rows(sections)],
        "details": {section.name: section.details for section in sections},
    }
    json_path = out_dir / "results.json"
    md_path = out_dir / "results.md"
    json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    md_path.write_text(markdown(sections, meta), encoding="utf-8")
    return json_path, md_path
