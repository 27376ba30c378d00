"""5. Throughput: 500 Predict calls, 64 at a time, against the fake with 50 ms latency.

sigform: ``await program.abatch(examples, concurrency=64)`` (native async) and
``program.batch(examples, num_threads=64)`` (threads). DSPy (``dspy_side/throughput.py``):
``asyncio.gather`` of ``program.acall`` under a 64-slot semaphore, and ``program.batch(...,
num_threads=64)`` (its Parallel executor). Cache off, temperature 0, default clients.

The ideal time is ``ceil(500 / 64) * 50 ms`` = 400 ms: every wave of 64 calls costs exactly the
server latency. The floor is what the machine and the fake server allow: the same 500 requests
(sigform's request body) over 64 raw asyncio keep-alive sockets (``benchmarks.socket_floor``);
sigform's async throughput is reported as a fraction of it, and threaded ``batch`` against
``abatch``. The HTTP library's own floor (``benchmarks.http_library_floor``: the same requests
through one bare aiohttp session, the library under sigform's async fast path) is reported
against the socket floor, and ``abatch`` against it: what sigform costs over its HTTP library.
Reported as wall seconds, calls per second, the ratio to DSPy's throughput
(async with async, threads with threads) and sigform's ratio to the ideal. Rounds alternate
between the sides; medians over rounds. The process CPU time per call of each run (all
threads) is reported too: on a shared machine, wall time follows the CPU share each client gets.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

from benchmarks.adapters_speed import Small
from benchmarks.common import Row, Section, median, paired_ratio, profile_top, run_dspy
from benchmarks.fake_server import FakeServer
from benchmarks.http_library_floor import aiohttp_times
from benchmarks.socket_floor import floor_times

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"


def _program(api_base: str) -> Any:
    import sigform as sf

    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="k", cache=False, temperature=0.0)
    return sf.Predict(Small, lm=lm, adapter=sf.ChatAdapter())


def sigform_round(api_base: str, n: int, concurrency: int) -> dict[str, float]:
    """Wall seconds of ``abatch`` and of threaded ``batch`` for ``n`` calls (fresh program each),
    and their process CPU seconds (``*_cpu``)."""
    examples = [{"question": f"Question {i}?"} for i in range(n)]
    program = _program(api_base)
    result: dict[str, float] = {}

    async def run_async() -> float:
        await program.acall(question="warm up")
        start, cpu = time.perf_counter(), time.process_time()
        out = await program.abatch(examples, concurrency=concurrency, max_errors=0, progress=False)
        elapsed = time.perf_counter() - start
        result["async_cpu"] = time.process_time() - cpu
        assert all(p.answer == "Paris" for p in out)
        return elapsed

    result["async"] = asyncio.run(run_async())
    program = _program(api_base)
    program(question="warm up")
    start, cpu = time.perf_counter(), time.process_time()
    out = program.batch(examples, num_threads=concurrency, max_errors=0, progress=False)
    result["batch_threads"] = time.perf_counter() - start
    result["batch_threads_cpu"] = time.process_time() - cpu
    assert all(p.answer == "Paris" for p in out)
    return result


def run(n: int = 500, concurrency: int = 64, latency: float = 0.05, rounds: int = 3,
        with_dspy: bool = True) -> Section:
    section = Section("throughput")
    ideal = math.ceil(n / concurrency) * latency
    ours: dict[str, list[float]] = {"async": [], "batch_threads": []}
    theirs: dict[str, list[float]] = {"async": [], "batch_threads": []}
    # process CPU seconds of the same runs: on a shared machine wall time follows how much of
    # the CPU each client gets, CPU time what each call costs
    cpu_ours: dict[str, list[float]] = {"async": [], "batch_threads": []}
    cpu_theirs: dict[str, list[float]] = {"async": [], "batch_threads": []}
    floors: list[float] = []
    floor_cpu: list[float] = []
    library: list[float] = []
    library_cpu: list[float] = []
    with FakeServer(CHAT_REPLY, latency=latency) as server:
        for _ in range(rounds):
            for key, value in sigform_round(server.api_base, n, concurrency).items():
                (cpu_ours[key[:-4]] if key.endswith("_cpu") else ours[key]).append(value)
            body = json.dumps(server.requests()[-1]).encode()
            wall, cpu = floor_times(server.api_base, body, n, concurrency)
            floors.append(wall)
            floor_cpu.append(cpu)
            wall, cpu = aiohttp_times(server.api_base, body, n, concurrency)
            library.append(wall)
            library_cpu.append(cpu)
            if with_dspy:
                raw = run_dspy("throughput.py", server.api_base, str(n), str(concurrency))
                for key, value in raw.items():
                    (cpu_theirs[key[:-4]] if key.endswith("_cpu") else theirs[key]).append(value)
        mine = {k: median(v) for k, v in ours.items()}
        other = {k: median(v) for k, v in theirs.items() if v}
        # sigform calls/s over DSPy's = DSPy's time over sigform's, paired by round
        speed = {k: paired_ratio(theirs[k], ours[k]) if theirs[k] else None for k in ours}
        profile = None
        if any(mine[k] > 1.3 * ideal for k in mine) or any(s is not None and s < 2 for s in speed.values()):
            program = _program(server.api_base)
            examples = [{"question": f"Q{i}"} for i in range(n)]

            def once() -> None:
                asyncio.run(program.abatch(examples, concurrency=concurrency, progress=False))

            profile = profile_top(once, calls=1) + "\n\n" + profile_top(once, calls=1, sort="tottime")
    section.rows.append(Row("5 throughput", f"ideal: ceil({n}/{concurrency}) x {latency * 1e3:.0f} ms", "s",
                            ideal, None, None, ratio_desc=""))
    floor = median(floors)
    section.rows.append(Row("5 throughput", f"floor: {n} requests over {concurrency} raw asyncio sockets",
                            "s", floor, None, floor / ideal, ratio_desc="floor / ideal"))
    vs_floor = paired_ratio(floors, ours["async"])
    section.rows.append(Row(
        "5 throughput", "sigform abatch calls/s / raw socket floor calls/s", "s", mine["async"], None,
        vs_floor,
        ratio_desc="floor time / sigform time", target=">= 0.9 of the floor",
        met=vs_floor is not None and vs_floor >= 0.9,
    ))
    library_vs_floor = paired_ratio(floors, library)
    section.rows.append(Row(
        "5 throughput", f"reference: {n} requests through one bare aiohttp session, calls/s / floor calls/s",
        "s", median(library), None, library_vs_floor, ratio_desc="floor time / aiohttp time",
    ))
    section.rows.append(Row(
        "5 throughput", "sigform abatch calls/s / bare aiohttp session calls/s", "s", mine["async"], None,
        paired_ratio(library, ours["async"]), ratio_desc="aiohttp time / sigform time",
    ))
    threads_vs_async = paired_ratio(ours["async"], ours["batch_threads"])
    section.rows.append(Row(
        "5 throughput", "sigform batch (threads) calls/s / abatch calls/s", "s", mine["batch_threads"], None,
        threads_vs_async, ratio_desc="abatch time / batch time", target=">= 1 (no worse than abatch)",
        met=threads_vs_async is not None and threads_vs_async >= 1.0,
    ))
    for key, label, theirs_label in (
        ("async", "sigform abatch", "DSPy acall + gather"),
        ("batch_threads", "sigform batch (threads)", "DSPy batch/Parallel"),
    ):
        t_mine, t_other = mine[key], other.get(key)
        ratio = speed[key]
        section.rows.append(Row(
            "5 throughput", f"{n} calls @{concurrency}: {label} vs {theirs_label}", "s",
            t_mine, t_other, ratio,
            ratio_desc="sigform calls/s / DSPy calls/s", target=">= 2x DSPy",
            met=(ratio >= 2) if ratio is not None else None,
        ))
        section.rows.append(Row(
            "5 throughput", f"{label}: time / ideal", "s", t_mine, None, t_mine / ideal,
            ratio_desc="sigform / ideal", target="<= 1.3x ideal", met=t_mine / ideal <= 1.3,
        ))
    us_per_call = 1e6 / n
    section.rows.append(Row(
        "5 throughput", f"CPU per call: raw socket floor ({n} @{concurrency})", "µs",
        median(floor_cpu) * us_per_call, None, None, ratio_desc="",
    ))
    section.rows.append(Row(
        "5 throughput", f"CPU per call: bare aiohttp session ({n} @{concurrency})", "µs",
        median(library_cpu) * us_per_call, None, None, ratio_desc="",
    ))
    for key, label, theirs_label in (
        ("async", "sigform abatch", "DSPy acall + gather"),
        ("batch_threads", "sigform batch (threads)", "DSPy batch/Parallel"),
    ):
        section.rows.append(Row(
            "5 throughput", f"CPU per call: {label} vs {theirs_label}", "µs",
            median(cpu_ours[key]) * us_per_call,
            median(cpu_theirs[key]) * us_per_call if cpu_theirs[key] else None,
            paired_ratio(cpu_theirs[key], cpu_ours[key]) if cpu_theirs[key] else None,
            ratio_desc="DSPy CPU / sigform CPU",
        ))
    section.details = {
        "sigform_cpu_s": cpu_ours, "dspy_cpu_s": cpu_theirs, "floor_cpu_s": floor_cpu,
        "sigform_s": ours, "dspy_s": theirs, "ideal_s": ideal, "floor_s": floors,
        "aiohttp_s": library, "aiohttp_cpu_s": library_cpu,
        "calls_per_s": {"sigform": {k: n / v for k, v in mine.items()},
                        "dspy": {k: n / v for k, v in other.items()}},
    }
    if profile:
        section.details["sigform_abatch_profile"] = profile
    return section
