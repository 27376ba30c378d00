"""DSPy side of 4. cost per Predict call end to end (run with the DSPy venv's python).

For each configuration -- engine ``auto`` (DSPy 3.4.1's default: its native lm15 client for
requests it can represent) and engine ``litellm``, each with an unknown model name and with a
known one -- a Predict(question -> answer) with the ChatAdapter (no JSON fallback needed: the
fake answers in chat format) calls the loopback fake sequentially, cache off, temperature 0.
Prints the median seconds per call over ``repeats`` rounds of ``calls`` calls.

    python e2e_call.py API_BASE CALLS REPEATS [LITELLM_CALLS]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import dspy


class Small(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def per_call(fn, calls: int, repeats: int) -> float:
    fn()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def main() -> None:
    api_base, calls, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    litellm_calls = int(sys.argv[4]) if len(sys.argv) > 4 else calls
    results = {}
    for engine in ("auto", "litellm"):
        for model in ("openai/bench-model", "openai/gpt-4o-mini"):
            lm = dspy.LM(model, api_base=api_base, api_key="k", cache=False, temperature=0.0, engine=engine)
            dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
            program = dspy.Predict(Small)

            def call(program=program) -> None:
                assert program(question="What is the capital of France?").answer == "Paris"

            n = calls if engine == "auto" else litellm_calls
            results[f"{engine}|{model}"] = per_call(call, n, repeats)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
