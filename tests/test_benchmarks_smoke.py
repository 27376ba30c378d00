"""Smoke test of the benchmark harness: sigform's side of a few measurements, tiny repeat counts.

No timing is asserted (speed lives in ``python -m benchmarks``); this checks that the
measurements run and that the table, JSON and Markdown have the documented structure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.common import Row
from benchmarks.report import COLUMNS, cells, fmt_ratio, fmt_value, write
from benchmarks.suite import Options, run_suite


@pytest.fixture(scope="module")
def quick_run() -> tuple[list, dict]:
    opts = Options.quick(only=("import", "format_parse", "corpus"), with_dspy=False, log=lambda _msg: None)
    return run_suite(opts)


def test_sections_and_rows(quick_run: tuple[list, dict]) -> None:
    sections, meta = quick_run
    assert [s.name for s in sections] == ["import", "format_parse", "corpus"]
    for section in sections:
        assert "error" not in section.details, section.details.get("error")
        if section.name == "corpus" and "skipped" in section.details:
            continue  # a clone with no corpus beside it (test_corpus_grades_every_case says so)
        assert section.rows, section.name
        for row in section.rows:
            assert isinstance(row, Row)
            assert row.dspy is None  # sigform only: nothing to compare with
            assert row.sigform is not None and row.sigform >= 0
    fp = next(s for s in sections if s.name == "format_parse")
    metrics = {r.metric for r in fp.rows}
    for adapter in ("chat", "json", "xml"):
        for size in ("small, no demos", "small, 3 demos", "large, 3 demos"):
            assert f"{adapter} {size}: format+parse" in metrics
    assert meta["dspy"] is None and "python" in meta


def test_corpus_grades_every_case(quick_run: tuple[list, dict]) -> None:
    corpus = next(s for s in quick_run[0] if s.name == "corpus")
    if "skipped" in corpus.details:
        pytest.skip(corpus.details["skipped"])
    tally = corpus.details["sigform"]
    assert sum(tally.values()) == corpus.details["cases"]
    silent = next(r for r in corpus.rows if r.metric.startswith("silently wrong"))
    assert silent.sigform == tally.get("WRONG", 0) + tally.get("ACCEPT", 0)
    assert silent.met == (silent.sigform == 0)


def test_written_table(quick_run: tuple[list, dict], tmp_path: Path) -> None:
    sections, meta = quick_run
    json_path, md_path = write(sections, meta, tmp_path)
    payload = json.loads(json_path.read_text())
    n_rows = sum(len(s.rows) for s in sections)
    assert len(payload["rows"]) == n_rows
    assert set(payload["details"]) == {s.name for s in sections}
    keys = {"section", "metric", "unit", "sigform", "dspy", "ratio", "target", "met"}
    assert keys <= set(payload["rows"][0])
    md = md_path.read_text()
    header = "| " + " | ".join(COLUMNS) + " |"
    assert header in md
    table_lines = [line for line in md.splitlines() if line.startswith("| ") and line != header]
    assert len(table_lines) == n_rows + 1  # the rows plus the alignment line
    assert all(line.count(" | ") == len(COLUMNS) - 1 for line in table_lines[1:])


def test_cell_formatting() -> None:
    row = Row("3 format+parse", "chat small", "µs", 12.345, 150.0, 12.15, target=">= 10x", met=True)
    want = ["3 format+parse", "chat small", "µs", "12.3", "150", "12.15x", "DSPy / sigform", ">= 10x", "yes"]
    assert cells(row) == want
    assert cells(Row("x", "m", "ms", 1.0, met=False))[-1] == "NO"
    assert fmt_value(None) == "-" and fmt_ratio(None) == "-"
    assert fmt_value(0.01234) == "0.0123" and fmt_value(3) == "3"


def test_fewshot_section_compares_strategies_with_intervals() -> None:
    from benchmarks import fewshot
    from benchmarks.real_suite.tasks import select

    tasks = select("people")
    test = fewshot._examples(tasks[0], "test", 4)

    def side(right: dict[str, list[bool]], calls: dict[str, int]) -> dict:
        out = {}
        for strategy, oks in right.items():
            records = []
            for example, ok in zip(test, oks, strict=True):
                value = dict(example["expect"]) if ok else {k: None for k in example["expect"]}
                records.append({"id": example["id"], "value": value, "calls": 1, "prompt_tokens": 10,
                                "completion_tokens": 5, "seconds": 2.0})
            out[strategy] = {"optimise": {"calls": calls.get(strategy, 0), "tokens": 0, "seconds": 0.0},
                             "records": records}
        return {"people": out}

    ours = side({"hand-picked": [True, False, False, False], "labeled": [True, True, False, False],
                 "bootstrap": [True, True, True, False], "knn": [True, True, True, True]}, {"bootstrap": 6})
    theirs = side({"labeled": [True, False, False, False], "bootstrap": [True, True, False, False],
                   "knn": [True, True, True, False]}, {"bootstrap": 9})["people"]
    mine = fewshot._totals(ours, tasks, 4)
    other = fewshot._totals({"people": theirs}, tasks, 4)
    overhead = fewshot.evaluate_overhead(n=20)
    assert set(overhead) == {"overhead_per_example", "plain_call"} and overhead["plain_call"] > 0
    section = fewshot._section(mine, other, overhead, tasks, 4, ours, {"people": theirs})
    rows = {r.metric: r for r in section.rows}
    assert rows["knn: all fields right"].sigform == 100 and rows["knn: all fields right"].dspy == 75
    assert "vs hand-picked +75.0 pts" in rows["knn: all fields right"].note
    assert rows["bootstrap: LM calls / tokens to choose demos"].dspy == 9
    best = rows["best strategy: all fields right"]
    assert best.met is True and "sigform knn" in best.note and "DSPy knn" in best.note
    assert rows["sf.evaluate overhead per example / one LM call"].target == "< 1%"


def test_fewshot_rerun_runs_only_the_named_rows_and_keeps_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    from benchmarks import fewshot
    from benchmarks.real_suite.tasks import select

    test = fewshot._examples(select("people")[0], "test", 2)

    def entry(ok: bool, calls: int = 0) -> dict:
        records = [{"id": e["id"], "value": dict(e["expect"]) if ok else {k: None for k in e["expect"]},
                    "calls": 1, "prompt_tokens": 10, "completion_tokens": 5, "seconds": 2.0} for e in test]
        return {"optimise": {"calls": calls, "tokens": 0, "seconds": 0.0}, "demos": [], "records": records}

    earlier = {
        "sigform": {"people": {p: entry(False) for p in fewshot.PROGRAMS}},
        "dspy": {"people": {s: entry(False, 4) for s in fewshot.STRATEGIES}},
    }
    asked: list[list[str]] = []

    def fake_sigform_side(tasks, base, model, limit, *, adapter, programs, log):
        asked.append(list(programs))
        return {"people": {p: entry(True) for p in programs}}

    served = ("http://x/v1", "openai/m")
    monkeypatch.setattr(fewshot, "server", lambda api_base: contextlib.nullcontext(served))
    monkeypatch.setattr(fewshot, "sigform_side", fake_sigform_side)
    overhead = {"overhead_per_example": 1e-4, "plain_call": 1e-3}
    monkeypatch.setattr(fewshot, "evaluate_overhead", lambda: overhead)
    section = fewshot.run(
        True, limit=2, task_names="people", api_base="http://x/v1", reuse=earlier, rerun=["sigform:knn"],
        log=lambda _: None,
    )
    assert asked == [["knn"]]  # DSPy's rows and the other sigform rows were not run again
    rows = {r.metric: r for r in section.rows}
    assert rows["knn: all fields right"].sigform == 100 and rows["knn: all fields right"].dspy == 0
    assert rows["labeled: all fields right"].sigform == 0
    assert rows["bootstrap: LM calls / tokens to choose demos"].dspy == 4


def test_the_suite_adapter_names_take_a_reask_count() -> None:
    from benchmarks.real_suite.sigform_side import make_adapter

    assert make_adapter("auto:reasks=0").max_reasks == 0
    assert make_adapter("json").max_reasks == 1
    with pytest.raises(ValueError, match="reasks=N"):
        make_adapter("auto:retries=0")


def test_throughput_reports_the_http_library_floor_beside_the_socket_floor() -> None:
    # the bare aiohttp session bounds what any client on aiohttp (sigform's async fast path)
    # can reach; the section must measure it in the same run as the socket floor and abatch
    from benchmarks import throughput

    section = throughput.run(n=24, concurrency=4, latency=0.005, rounds=1, with_dspy=False)
    rows = {row.metric: row for row in section.rows}
    library = rows["reference: 24 requests through one bare aiohttp session, calls/s / floor calls/s"]
    over_library = rows["sigform abatch calls/s / bare aiohttp session calls/s"]
    assert library.sigform is not None and library.sigform > 0
    assert library.ratio is not None and library.ratio > 0
    assert over_library.ratio is not None and over_library.ratio > 0
    assert len(section.details["aiohttp_s"]) == 1 and section.details["aiohttp_cpu_s"][0] > 0
    assert rows["CPU per call: bare aiohttp session (24 @4)"].sigform is not None


def test_the_mcp_overhead_measurement_runs() -> None:
    from benchmarks import mcp_overhead

    section = mcp_overhead.run(rounds=1, per_round=2)
    assert [r.metric.split(":")[0] for r in section.rows] == [
        "MCP list 11 tools",
        "MCP one tool call (async)",
        "MCP one tool call (sync)",
    ]
    assert all(r.sigform is not None and r.ratio and r.ratio > 0 for r in section.rows)
