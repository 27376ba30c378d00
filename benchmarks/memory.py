"""6. Memory after 10,000 sequential Predict calls: bounded history, no growth past its cap.

Each side runs in a fresh process (sigform: ``python -m benchmarks.memory``; DSPy:
``dspy_side/memory.py``) that calls ``Predict(question -> answer)`` against the loopback fake
(0 ms latency, cache off) and reads its resident memory after ``gc.collect()`` at checkpoints.
sigform's LM keeps the last 1,000 calls (``history_size``) and a bounded global history, so
memory must stop growing once the history is full: the figure that matters is the growth from
the 2,000th to the last call. DSPy keeps up to ``max_history_size`` = 10,000 entries per LM.
"""

from __future__ import annotations

import argparse
import gc
import json
import os

from benchmarks.common import Row, Section, run_dspy, run_sigform
from benchmarks.fake_server import FakeServer

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def checkpoints(n: int) -> list[int]:
    return sorted({min(n, c) for c in (100, 1000, 2000, n // 2, n)})


def child(api_base: str, n: int, marks: set[int]) -> dict[str, object]:
    """Run in a fresh process: ``n`` calls, RSS at ``marks``."""
    import sigform as sf
    from benchmarks.adapters_speed import Small
    from sigform.lm import history

    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="k", cache=False, temperature=0.0)
    program = sf.Predict(Small, lm=lm, adapter=sf.ChatAdapter())
    rss: dict[int, float] = {}
    for i in range(1, n + 1):
        assert program(question=f"Question {i}?").answer == "Paris"
        if i in marks:
            gc.collect()
            rss[i] = rss_mb()
    return {"rss_mb": rss, "lm_history": len(lm.history), "global_history": len(history._global)}


def run(n: int = 10_000, with_dspy: bool = True) -> Section:
    section = Section("memory")
    marks = checkpoints(n)
    arg = ",".join(map(str, marks))
    with FakeServer(CHAT_REPLY) as server:
        ours = run_sigform("memory", "--child", server.api_base, str(n), arg)
        theirs = run_dspy("memory.py", server.api_base, str(n), arg) if with_dspy else None

    def growth(res: dict | None, start: int) -> float | None:
        if res is None:
            return None
        rss = {int(k): v for k, v in res["rss_mb"].items()}
        return rss[n] - rss[start]

    base = 2000 if n > 2000 else marks[0]
    g_mine, g_other = growth(ours, base), growth(theirs, base)
    section.rows.append(Row(
        "6 memory", f"RSS growth, call {base} -> {n}", "MB", g_mine, g_other,
        (g_other / g_mine) if (g_other is not None and g_mine and g_mine > 0.5) else None,
        target="no growth past the history cap (< 2 MB)", met=g_mine < 2.0,
    ))
    section.rows.append(Row(
        "6 memory", f"RSS after {n} calls", "MB", ours["rss_mb"][str(n)],
        theirs["rss_mb"][str(n)] if theirs else None, None, ratio_desc="",
    ))
    section.rows.append(Row(
        "6 memory", "history entries kept (LM / global)", "entries", ours["lm_history"],
        theirs["lm_history"] if theirs else None, None, ratio_desc="",
        note=f"global: sigform {ours['global_history']}, DSPy {theirs['global_history'] if theirs else '-'}",
    ))
    section.details = {"sigform": ours, "dspy": theirs, "calls": n}
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description="sigform side of the memory benchmark (child process)")
    parser.add_argument("--child", nargs=3, metavar=("API_BASE", "N", "CHECKPOINTS"), required=True)
    args = parser.parse_args()
    api_base, n, marks = args.child
    print(json.dumps(child(api_base, int(n), {int(m) for m in marks.split(",")})))


if __name__ == "__main__":
    main()
