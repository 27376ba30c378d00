"""DSPy side of the real-model suite (run with the DSPy venv's python).

Reads ``{"api_base", "model", "max_tokens", "adapter", "jobs": [{"task", "examples"}]}`` as JSON on
stdin. For each task: a ``dspy.Predict`` over the same fields (declared by
``benchmarks/real_suite/tasks.py``) with the same 3 demos and the named DSPy adapter (``chat`` keeps
its JSON fallback, as users get it); the LM settings are ``suite_client.configure``'s. Prints one
JSON line: per task, one record per example with the value or the error and the calls/tokens the
LM history gained during it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import dspy
from suite_client import configure, run_examples, signature_of, tasks


def run_task(lm: Any, task: Any, examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    program = dspy.Predict(signature_of(task))
    program.demos = [dspy.Example(text=d["text"], **task.typed(d["expect"])) for d in task.examples("demos")]
    return run_examples(program, task, lm, examples)


def main() -> None:
    job = json.load(sys.stdin)
    lm = configure(job, job["adapter"])
    results = {
        item["task"]: run_task(lm, tasks.TASKS[item["task"]], item["examples"]) for item in job["jobs"]
    }
    print(json.dumps({"dspy": dspy.__version__, "tasks": results}))


if __name__ == "__main__":
    main()
