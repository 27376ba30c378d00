"""11. Scale out: 5,000 rows against the fake at 50 ms latency, one process and on Ray.

sigform only (DSPy has no counterpart). The fake runs in its own process and records when each
request arrived, so rates are measured where a provider would measure them.

* single process: ``await program.abatch(rows, concurrency=64)`` vs the ideal
  ``ceil(rows / 64) x 50 ms``; the same at 128 in flight, the reference for Ray's overhead;
* Ray, 2 workers x 64 calls in flight (``sigform.ray.map_program`` on a local ``ray.init(num_cpus=2)``):
  wall time (with the two actors' start, which loads sigform in each) and active time (first to
  last batch, from the run's tally) vs the ideal ``ceil(rows / 128) x 50 ms``; Ray's per-row
  overhead = (active time - single-process time at 128 in flight) / rows;
* Ray with ``rpm=6000`` (100 requests/s) on the LM: the achieved rate (requests over the span of
  their arrivals) and the most requests in any 1 s window, vs the limit; target: held within 5%;
* resume: a single-process run checkpointed on half the rows, then on all of them, and the
  limited Ray run repeated with its checkpoint directory: how many rows were asked twice (target 0).
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, Row, Section
from benchmarks.fake_server import FakeServer
from sigform.testing.rates import max_in_window

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
SECTION = "11 scale out"


def _program(api_base: str, **lm_options: Any) -> Any:
    import sigform as sf

    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="k", cache=False, temperature=0.0,
               **lm_options)
    return sf.Predict("question -> answer", lm=lm, adapter=sf.ChatAdapter())


def _abatch(program: Any, examples: list[dict[str, Any]], concurrency: int, **kw: Any) -> float:
    async def go() -> float:
        await program.acall(question="warm up")
        start = time.perf_counter()
        out = await program.abatch(examples, concurrency=concurrency, progress=False, max_errors=0, **kw)
        elapsed = time.perf_counter() - start
        assert all(p.answer == "Paris" for p in out)
        return elapsed

    return asyncio.run(go())


def _ray_run(ds: Any, program: Any, **kw: Any) -> tuple[float, dict[str, Any], int]:
    """Wall seconds, the tally's summary and the rows that came back with an error."""
    from sigform.ray import RunTally, map_program

    tally = RunTally()
    start = time.perf_counter()
    out = map_program(ds, program, concurrency=2, batch_size=64, calls_per_worker=64, tally=tally, **kw)
    rows = out.select_columns(["answer", "error"]).take_all()
    wall = time.perf_counter() - start
    assert len(rows) == ds.count(), "a row was dropped"
    failed = sum(r["error"] is not None for r in rows)
    return wall, tally.summary(), failed


def run(rows: int = 5000, latency: float = 0.05, limit_rps: float = 100.0) -> Section:
    import ray

    section = Section("ray_scale")
    examples = [{"question": f"Question {i}?"} for i in range(rows)]
    details: dict[str, Any] = {"rows": rows, "latency_s": latency, "limit_rps": limit_rps,
                               "load_average_start": os.getloadavg()}
    with FakeServer(CHAT_REPLY, latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        # -- one process ------------------------------------------------------------------------
        local64 = _abatch(_program(server.api_base), examples, 64)
        local128 = _abatch(_program(server.api_base), examples, 128)
        ideal64 = math.ceil(rows / 64) * latency
        ideal128 = math.ceil(rows / 128) * latency
        before = len(server.arrivals())
        checkpoint = Path(tmp) / "local.jsonl"
        _abatch(_program(server.api_base), examples[: rows // 2], 64, checkpoint=checkpoint)
        _abatch(_program(server.api_base), examples, 64, checkpoint=checkpoint)
        local_asked = len(server.arrivals()) - before - 2  # minus the two warm-up calls
        local_repeats = local_asked - rows
        # -- Ray --------------------------------------------------------------------------------
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
        details["ray_init_s"] = round(time.perf_counter() - started, 2)
        try:
            import ray.data

            ray.data.DataContext.get_current().enable_progress_bars = False
            ds = ray.data.from_items([{"id": i, **x} for i, x in enumerate(examples)]).materialize()
            wall, tally, failed = _ray_run(ds, _program(server.api_base))
            active = tally["seconds"]
            overhead_ms = (active - local128) / rows * 1e3
            details["ray"] = {"wall_s": wall, "tally": tally, "failed": failed}

            directory = Path(tmp) / "ray-checkpoint"
            before = len(server.arrivals())
            limited = _program(server.api_base, rpm=limit_rps * 60)
            lwall, ltally, lfailed = _ray_run(ds, limited, checkpoint=directory)
            arrivals = server.arrivals()[before:]
            span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else float("nan")
            achieved = (len(arrivals) - 1) / span
            window_max = max_in_window(arrivals, 1.0)
            details["ray_limited"] = {"wall_s": lwall, "tally": ltally, "failed": lfailed,
                                      "requests": len(arrivals), "span_s": span}

            before = len(server.arrivals())
            rwall, rtally, rfailed = _ray_run(ds, limited, checkpoint=directory)
            ray_repeats = len(server.arrivals()) - before
            details["ray_resumed"] = {"wall_s": rwall, "tally": rtally, "failed": rfailed}
        finally:
            ray.shutdown()
    details["load_average_end"] = os.getloadavg()

    def row(metric: str, unit: str, value: float | None, ratio: float | None = None, desc: str = "",
            target: str = "", met: bool | None = None) -> None:
        section.rows.append(Row(SECTION, metric, unit, value, None, ratio, ratio_desc=desc, target=target,
                                met=met))

    row(f"single process abatch, {rows} rows @64", "s", local64, local64 / ideal64, "time / ideal")
    row(f"single process abatch, {rows} rows @128", "s", local128, local128 / ideal128, "time / ideal")
    row("Ray 2 workers x 64: wall (with actor start)", "s", wall, wall / ideal128, "time / ideal")
    row("Ray 2 workers x 64: active (first to last batch)", "s", active, active / ideal128, "time / ideal")
    row("Ray per-row overhead (active - single process @128) / rows", "ms", overhead_ms,
        target="< 2 ms", met=overhead_ms < 2)
    row(f"Ray, limit {limit_rps:.0f} req/s: achieved rate", "req/s", achieved, achieved / limit_rps,
        "achieved / limit", target="within 5% of the limit", met=abs(achieved / limit_rps - 1) <= 0.05)
    row(f"Ray, limit {limit_rps:.0f} req/s: most requests in any 1 s", "requests", window_max,
        window_max / limit_rps, "window / limit", target="<= limit + 5%", met=window_max <= limit_rps * 1.05)
    row("resume (single process): rows asked twice", "rows", local_repeats, target="0",
        met=local_repeats == 0)
    row("resume (Ray checkpoint dir): rows asked again", "rows", ray_repeats, target="0",
        met=ray_repeats == 0)
    section.details = details
    return section


if __name__ == "__main__":
    from benchmarks.report import print_table

    print_table([run()])
