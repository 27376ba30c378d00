"""The suite's tables (Markdown, also printed to the terminal) and the failure listing."""

from __future__ import annotations

import json
from typing import Any

HEAD = (
    "program",
    "all fields right",
    "field accuracy",
    "parse failures",
    "calls",
    "prompt tokens",
    "completion tokens",
    "prompt tokens / call",
    "s / example",
    "median s",
)


def _row(name: str, s: dict[str, Any]) -> list[str]:
    n = s["examples"]
    return [
        name,
        f"{100 * s['accuracy']:.1f}% ({s['right']}/{n})",
        f"{100 * s['field_accuracy']:.1f}%",
        f"{s['parse_failures']} of {n}",
        str(s["calls"]),
        f"{s['prompt_tokens']:,}",
        f"{s['completion_tokens']:,}",
        f"{s['prompt_tokens_per_call']:.0f}",
        f"{s['seconds_per_example']:.2f}",
        f"{s['median_seconds']:.2f}" if "median_seconds" in s else "",
    ]


def _table(head: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |"]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]


def markdown(run: dict[str, Any], title: str = "Real-model suite") -> str:
    results = run["results"]
    lines = [
        f"# {title}",
        "",
        f"Split `{run['split']}`"
        + (f" (first {run['limit']} per task)" if run.get("limit") else "")
        + f", tasks {', '.join(run['tasks'])}; model `{run['model']}`, temperature 0, "
        f"max_tokens {run['max_tokens']}, the same 3 demos per task for every program.",
        "",
    ]
    lines += _table(HEAD, [_row(r["program"], r["total"]) for r in results])
    lines += ["", "All fields right, per task:", ""]
    per_task = []
    for r in results:
        cells = [r["program"]]
        for task in run["tasks"]:
            s = r["tasks"][task]["summary"]
            cells.append(f"{100 * s['accuracy']:.0f}% ({s['parse_failures']} pf)")
        per_task.append(cells)
    lines += _table(["program", *run["tasks"]], per_task)
    return "\n".join(lines) + "\n"


def failures(run: dict[str, Any], limit: int = 10) -> str:
    """The first ``limit`` failed examples of each program: error, or wrong fields with both values."""
    out = []
    for r in run["results"]:
        bad = [rec for t in r["tasks"].values() for rec in t["records"] if not rec["right"]]
        out.append(f"## {r['program']}: {len(bad)} not right")
        for rec in bad[:limit]:
            if rec.get("error"):
                out.append(f"- {rec['id']}: {rec['error'][:300]}")
                if rec.get("raw"):
                    out.append(f"    raw: {json.dumps(rec['raw'][:300], ensure_ascii=False)}")
            else:
                wrong = [k for k, ok in rec["fields"].items() if not ok]
                got = {k: rec["value"].get(k) for k in wrong}
                want = {k: rec["expect"][k] for k in wrong}
                out.append(
                    f"- {rec['id']}: wrong {wrong}: got {json.dumps(got, ensure_ascii=False)}, "
                    f"want {json.dumps(want, ensure_ascii=False)}"
                )
    return "\n".join(out)


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One run out of several of the same split, tasks, model and limits (programs run apart,
    e.g. on two servers at once), programs in the suite's order."""
    from benchmarks.real_suite.run import ALL_PROGRAMS

    same = ("split", "limit", "model", "max_tokens", "tasks")
    first = runs[0]
    for other in runs[1:]:
        differs = [k for k in same if other.get(k) != first.get(k)]
        if differs:
            raise ValueError(f"cannot merge runs that differ in {differs}")
    results = [rescore(r) for run in runs for r in run["results"]]
    results.sort(key=lambda r: ALL_PROGRAMS.index(r["program"]))
    return {**{k: first[k] for k in same}, "results": results}


def rescore(result: dict[str, Any]) -> dict[str, Any]:
    """A saved program result graded again with the current rules (one grader for the table)."""
    from benchmarks.real_suite.run import score_records
    from benchmarks.real_suite.scoring import summarise
    from benchmarks.real_suite.tasks import TASKS

    every: list[dict[str, Any]] = []
    for name, task_result in result["tasks"].items():
        if not task_result["records"]:
            continue
        by_id = {e["id"]: e for split in ("dev", "test") for e in TASKS[name].examples(split)}
        records = score_records(task_result["records"], [by_id[r["id"]] for r in task_result["records"]])
        task_result["summary"] = summarise(records)
        every += records
    if every:
        result["total"] = summarise(every)
    return result
