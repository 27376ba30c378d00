"""What the DSPy side's real-suite scripts share (``real_suite.py``, ``fewshot.py``).

They run with the DSPy venv's python, so they cannot import sigform or ``benchmarks``: the suite's
``tasks.py`` and ``scoring.py`` (standard library and pydantic only) are loaded by path. Here: the
LM every script uses (the job's server, temperature 0, cache off, ``engine="litellm"``: DSPy's
native client sends ``max_completion_tokens``, which llama-cpp-python's server ignores), the
``dspy.Predict`` signature over a task's fields, and the per-example loop that records the value or
the error and the calls/tokens the LM history gained during it.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import dspy

SUITE = Path(__file__).resolve().parent.parent / "real_suite"
ADAPTERS = {"chat": dspy.ChatAdapter, "json": dspy.JSONAdapter, "xml": dspy.XMLAdapter}


def load_suite(name: str) -> Any:
    """``benchmarks/real_suite/<name>.py`` as a module (registered: pydantic resolves the models'
    annotations through ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(f"real_suite_{name}", SUITE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tasks = load_suite("tasks")


def configure(job: dict[str, Any], adapter: str) -> Any:
    """The job's LM, configured globally with the named DSPy adapter; returns the LM."""
    if adapter not in ADAPTERS:
        raise ValueError(f"unknown DSPy adapter {adapter!r}; choose from {sorted(ADAPTERS)}")
    lm = dspy.LM(
        job["model"],
        api_base=job["api_base"],
        api_key="local",
        cache=False,
        temperature=0.0,
        max_tokens=job["max_tokens"],
        engine="litellm",
        model_type=job.get("model_type", "chat"),  # "text": litellm's text completions
    )
    dspy.configure(lm=lm, adapter=ADAPTERS[adapter]())
    return lm


def signature_of(task: Any) -> Any:
    fields: dict[str, Any] = {"text": (str, dspy.InputField(desc=task.input_desc))}
    for out in task.outputs:
        fields[out.name] = (
            out.annotation,
            dspy.OutputField(desc=out.desc) if out.desc else dspy.OutputField(),
        )
    return dspy.make_signature(fields, task.instructions)


def usage_of(entries: list[dict[str, Any]], key: str) -> int:
    return sum((e.get("usage") or {}).get(key, 0) or 0 for e in entries)


def run_examples(program: Any, task: Any, lm: Any, examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per example: the plain-JSON value or the error (with the raw answer), and what it
    cost."""
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
        record["prompt_tokens"] = usage_of(new, "prompt_tokens")
        record["completion_tokens"] = usage_of(new, "completion_tokens")
        if "error" in record and new:
            outputs = new[-1].get("outputs") or []
            record["raw"] = str(outputs[0] if outputs else "")[:1500]
        records.append(record)
    return records
