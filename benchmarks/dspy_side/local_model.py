"""DSPy side of 8. the demo task on the embedded local model (run with the DSPy venv's python).

Reads ``{"api_base", "model", "max_tokens", "engine", "demos", "examples"}`` as JSON on stdin. A Predict over
the demo signature (text -> payee, amount_usd, date, category) with the demos, DSPy's default
ChatAdapter (with its JSON fallback, as users get it), temperature 0, cache off, runs each
example; prints per example the values or the error, plus the generated tokens of every call
the LM made (from the server's usage, through the LM's history).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Literal

import dspy


class Expense(dspy.Signature):
    """Extract the expense described in the text."""

    text: str = dspy.InputField()
    payee: str = dspy.OutputField(desc="who was paid")
    amount_usd: float = dspy.OutputField(desc="amount in US dollars")
    date: str = dspy.OutputField(desc="YYYY-MM-DD")
    category: Literal["meals", "travel", "office", "software"] = dspy.OutputField()


def main() -> None:
    job = json.load(sys.stdin)
    # engine="litellm": DSPy's native client sends max_tokens as `max_completion_tokens`, which the
    # llama.cpp server ignores (generation then runs to the context limit); litellm sends `max_tokens`.
    lm = dspy.LM(job["model"], api_base=job["api_base"], api_key="local", cache=False, temperature=0.0,
                 max_tokens=job["max_tokens"], engine=job.get("engine", "litellm"))
    dspy.configure(lm=lm)
    program = dspy.Predict(Expense)
    program.demos = [dspy.Example(**d) for d in job["demos"]]
    outcomes = []
    start = time.perf_counter()
    for example in job["examples"]:
        try:
            pred = program(text=example["text"])
            outcomes.append({"value": {k: pred[k] for k in ("payee", "amount_usd", "date", "category")}})
        except Exception as exc:
            outcomes.append({"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    elapsed = time.perf_counter() - start
    tokens = sum((entry.get("usage") or {}).get("completion_tokens", 0) or 0 for entry in lm.history)
    print(json.dumps({"outcomes": outcomes, "completion_tokens": tokens, "lm_calls": len(lm.history),
                      "seconds": elapsed}))


if __name__ == "__main__":
    main()
