"""DSPy side of the real-model suite (run with the DSPy venv's python).

Reads ``{"api_base", "model", "max_tokens", "adapter", "jobs": [{"task", "examples"}]}`` as JSON on
stdin. For each task: a ``dspy.Predict`` over the same fields (declared by
``benchmarks/real_suite/tasks.py``, loaded by path: it needs only pydantic) with the same 3 demos,
the named DSPy adapter (``chat`` keeps its JSON fallback, as users get it), temperature 0, cache
off, ``engine="litellm"`` (DSPy's native client sends ``max_completion_tokens``, which
llama-cpp-python's server ignores). Prints one JSON line: per task, one record per example with
the value or the error and the calls/tokens the LM history gained during it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import dspy

TASKS_FILE = Path(__file__).resolve().parent.parent / "real_suite" / "tasks.py"


def load_tasks() -> Any:
    spec = importlib.util.spec_from_file_location("real_suite_tasks", TASKS_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


def signature_of(task: Any) -> Any:
    fields: dict[str, Any] = {"text": (str, dspy.InputField(desc=task.input_desc))}
    for out in task.outputs:
        fields[out.name] = (
            out.annotation,
            dspy.OutputField(desc=out.desc) if out.desc else dspy.OutputField(),
        )
    return dspy.make_signature(fields, task.instructions)


def adapter_of(name: str) -> Any:
    return {"chat": dspy.ChatAdapter, "json": dspy.JSONAdapter, "xml": dspy.XMLAdapter}[name]()


def run_task(tasks: Any, lm: Any, task: Any, examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    program = dspy.Predict(signature_of(task))
    program.demos = [dspy.Example(text=d["text"], **task.typed(d["expect"])) for d in task.examples("demos")]
    records = []
    for example in examples:
        seen = len(lm.history)
        start = time.perf_counter()
        record: dict[str, Any] = {"id": example["id"]}
        try:
            pred = program(text=example["text"])
            record["value"] = {name: tasks.to_plain(pred[name]) for name in task.output_names}
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
        record["seconds"] = time.perf_counter() - start
        new = lm.history[seen:]
        record["calls"] = len(new)
        record["prompt_tokens"] = sum((e.get("usage") or {}).get("prompt_tokens", 0) or 0 for e in new)
        record["completion_tokens"] = sum(
            (e.get("usage") or {}).get("completion_tokens", 0) or 0 for e in new
        )
        if "error" in record and new:
            outputs = new[-1].get("outputs") or []
            record["raw"] = str(outputs[0] if outputs else "")[:1500]
        records.append(record)
    return records


def main() -> None:
    job = json.load(sys.stdin)
    tasks = load_tasks()
    lm = dspy.LM(
        job["model"],
        api_base=job["api_base"],
        api_key="local",
        cache=False,
        temperature=0.0,
        max_tokens=job["max_tokens"],
        engine="litellm",
    )
    dspy.configure(lm=lm, adapter=adapter_of(job["adapter"]))
    results = {
        item["task"]: run_task(tasks, lm, tasks.TASKS[item["task"]], item["examples"]) for item in job["jobs"]
    }
    print(json.dumps({"dspy": dspy.__version__, "tasks": results}))


if __name__ == "__main__":
    main()
