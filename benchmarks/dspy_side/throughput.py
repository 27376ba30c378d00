"""DSPy side of 5. throughput (run with the DSPy venv's python).

``N`` Predict(question -> answer) calls against the loopback fake (its latency set by the
parent), 64 at a time: ``program.batch(examples, num_threads=64)`` (DSPy's Parallel executor,
threads) and ``asyncio.gather`` of ``program.acall`` under a 64-slot semaphore (native async).
Default engine, cache off, temperature 0. Prints the wall seconds of each and the process CPU
seconds (``*_cpu``: all threads).

    python throughput.py API_BASE N CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import dspy


class Small(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def main() -> None:
    api_base, n, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lm = dspy.LM("openai/gpt-4o-mini", api_base=api_base, api_key="k", cache=False, temperature=0.0)
    dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
    program = dspy.Predict(Small)
    examples = [dspy.Example(question=f"Question {i}?").with_inputs("question") for i in range(n)]
    program(question="warm up")
    results = {}

    start, cpu = time.perf_counter(), time.process_time()
    out = program.batch(examples, num_threads=concurrency, disable_progress_bar=True, max_errors=0)
    results["batch_threads"] = time.perf_counter() - start
    results["batch_threads_cpu"] = time.process_time() - cpu
    assert all(p is not None and p.answer == "Paris" for p in out), "a threaded call failed"

    async def run_async() -> float:
        await program.acall(question="warm up")
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> str:
            async with sem:
                return (await program.acall(question=f"Question {i}?")).answer

        start, cpu = time.perf_counter(), time.process_time()
        answers = await asyncio.gather(*(one(i) for i in range(n)))
        elapsed = time.perf_counter() - start
        results["async_cpu"] = time.process_time() - cpu
        assert all(a == "Paris" for a in answers), "an async call failed"
        return elapsed

    results["async"] = asyncio.run(run_async())
    print(json.dumps(results))


if __name__ == "__main__":
    main()
