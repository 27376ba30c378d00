"""DSPy side of 3. format and parse time per call (run with the DSPy venv's python).

Reads the cases (``{"small"|"small_demos"|"large": {"demos", "inputs", "outputs"}}``, JSON on stdin, produced
by ``benchmarks.format_parse`` from ``benchmarks.adapters_speed.case``) and prints, per adapter
and size, the median microseconds of ``adapter.format(signature, demos, inputs)`` and of
``adapter.parse(signature, completion)`` where the completion is the adapter's own rendering of
the expected outputs (checked to parse back to them).

    python format_parse.py REPEATS < cases.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any, Literal

import dspy
from pydantic import BaseModel


class Address(BaseModel):
    street: str
    city: str
    zip_code: str


class Person(BaseModel):
    name: str
    age: int
    address: Address


class Small(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


class Large(dspy.Signature):
    """Extract the record from the documents."""

    document: str = dspy.InputField(desc="the main document")
    context: list[str] = dspy.InputField()
    language: str = dspy.InputField()
    max_items: int = dspy.InputField()
    strict: bool = dspy.InputField()
    notes: str = dspy.InputField()
    person: Person = dspy.OutputField(desc="the person described")
    keywords: list[str] = dspy.OutputField()
    category: Literal["news", "opinion", "review", "other"] = dspy.OutputField()
    confidence: float = dspy.OutputField()
    pages: int = dspy.OutputField()
    summary: str = dspy.OutputField()


ADAPTERS = {"chat": dspy.ChatAdapter, "json": dspy.JSONAdapter, "xml": dspy.XMLAdapter}
SIGNATURES = {"small": Small, "small_demos": Small, "large": Large}


def typed(values: dict[str, Any]) -> dict[str, Any]:
    return {k: Person.model_validate(v) if k == "person" else v for k, v in values.items()}


def median_us(fn: Any, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    repeats = int(sys.argv[1])
    cases = json.load(sys.stdin)
    results: dict[str, Any] = {}
    for name, cls in ADAPTERS.items():
        # no fallback to another adapter: parse is measured on its own
        adapter = cls(use_json_adapter_fallback=False) if name == "chat" else cls()
        for size, signature in SIGNATURES.items():
            case = cases[size]
            demos = [typed(d) for d in case["demos"]]
            inputs = case["inputs"]
            outputs = typed(case["outputs"])
            completion = adapter.format_assistant_message_content(signature, outputs)
            parsed = adapter.parse(signature, completion)
            assert parsed == outputs, (name, size, parsed, outputs)
            fmt = median_us(lambda a=adapter, s=signature, d=demos, i=inputs: a.format(s, d, i), repeats)
            parse = median_us(lambda a=adapter, s=signature, c=completion: a.parse(s, c), repeats)
            results[f"{name}/{size}"] = {"format_us": fmt, "parse_us": parse, "total_us": fmt + parse}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
