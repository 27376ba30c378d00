"""DSPy side of 6. memory after many sequential calls (run with the DSPy venv's python).

Predict(question -> answer) calls the loopback fake ``N`` times in a row (default engine, cache
off); prints the process's resident memory (MB, after ``gc.collect()``) at the checkpoints and
the length of the LM's history and of DSPy's global history at the end.

    python memory.py API_BASE N CHECKPOINT[,CHECKPOINT...]
"""

from __future__ import annotations

import gc
import json
import os
import sys

import dspy
from dspy.clients.base_lm import GLOBAL_HISTORY


class Small(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    api_base, n = sys.argv[1], int(sys.argv[2])
    checkpoints = {int(c) for c in sys.argv[3].split(",")}
    lm = dspy.LM("openai/gpt-4o-mini", api_base=api_base, api_key="k", cache=False, temperature=0.0)
    dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
    program = dspy.Predict(Small)
    rss = {}
    for i in range(1, n + 1):
        assert program(question=f"Question {i}?").answer == "Paris"
        if i in checkpoints:
            gc.collect()
            rss[i] = rss_mb()
    print(json.dumps({"rss_mb": rss, "lm_history": len(lm.history), "global_history": len(GLOBAL_HISTORY)}))


if __name__ == "__main__":
    main()
