"""Format and parse time per call for each adapter, small and large signatures.

small: ``question -> answer`` without demos; small_demos: the same with 3 demos (what a
compiled program sends); large: 6 inputs, 6 typed outputs (a nested model, a list, a Literal, a
float, ...) and 3 demos. Prints the median over repeats, in microseconds.
``bench_sigform(adapter_name, size)`` is importable for side-by-side comparisons.

    python benchmarks/adapters_speed.py [--repeats 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Literal

from pydantic import BaseModel

import sigform as sf
from sigform.adapters import ChatAdapter, JSONAdapter, TwoStepAdapter, XMLAdapter

ADAPTERS = {"chat": ChatAdapter, "json": JSONAdapter, "xml": XMLAdapter, "two_step": TwoStepAdapter}


class Address(BaseModel):
    street: str
    city: str
    zip_code: str


class Person(BaseModel):
    name: str
    age: int
    address: Address


class Small(sf.Signature):
    """Answer the question."""

    question: str = sf.InputField()
    answer: str = sf.OutputField()


class Large(sf.Signature):
    """Extract the record from the documents."""

    document: str = sf.InputField(desc="the main document")
    context: list[str] = sf.InputField()
    language: str = sf.InputField()
    max_items: int = sf.InputField()
    strict: bool = sf.InputField()
    notes: str = sf.InputField()
    person: Person = sf.OutputField(desc="the person described")
    keywords: list[str] = sf.OutputField()
    category: Literal["news", "opinion", "review", "other"] = sf.OutputField()
    confidence: float = sf.OutputField()
    pages: int = sf.OutputField()
    summary: str = sf.OutputField()


def _large_outputs(i: int) -> dict[str, Any]:
    return {
        "person": Person(
            name=f"Ada {i}", age=30 + i, address=Address(street="1 Main St", city="Oslo", zip_code="0150")
        ),
        "keywords": ["alpha", "beta", f"gamma {i}"],
        "category": "review",
        "confidence": 0.875,
        "pages": 12 + i,
        "summary": "A short summary of the document, with a couple of clauses.",
    }


def _large_inputs(i: int) -> dict[str, Any]:
    return {
        "document": "The quick brown fox jumps over the lazy dog. " * 8 + str(i),
        "context": ["first passage", "second passage", "third passage"],
        "language": "en",
        "max_items": 5,
        "strict": True,
        "notes": "none",
    }


SIZES = ("small", "small_demos", "large")
SIZE_LABELS = {"small": "small, no demos", "small_demos": "small, 3 demos", "large": "large, 3 demos"}
SMALL_DEMOS = [
    {"question": "What is the capital of Italy?", "answer": "Rome"},
    {"question": "What is the capital of Japan?", "answer": "Tokyo"},
    {"question": "What is the capital of Kenya?", "answer": "Nairobi"},
]


def case(size: str) -> tuple[Any, list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(signature, demos, inputs, outputs) of the ``small``, ``small_demos`` or ``large`` case."""
    if size in ("small", "small_demos"):
        demos = [dict(d) for d in SMALL_DEMOS] if size == "small_demos" else []
        return Small, demos, {"question": "What is the capital of France?"}, {"answer": "Paris"}
    if size == "large":
        demos = [{**_large_inputs(i), **_large_outputs(i)} for i in range(3)]
        return Large, demos, _large_inputs(9), _large_outputs(9)
    raise ValueError(f"size must be one of {SIZES}, got {size!r}")


def _median_us(fn: Any, repeats: int) -> float:
    fn()  # warm caches (compiled templates, per-signature system message)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def bench_sigform(adapter_name: str, size: str, repeats: int = 500) -> dict[str, float]:
    """Median microseconds per call: ``{"format_us", "parse_us", "total_us"}``."""
    adapter = ADAPTERS[adapter_name]()
    signature, demos, inputs, outputs = case(size)
    completion = adapter.format_assistant(signature, outputs)
    assert adapter.parse(signature, completion) == outputs
    fmt = _median_us(lambda: adapter.format(signature, demos, inputs), repeats)
    parse = _median_us(lambda: adapter.parse(signature, completion), repeats)
    return {"format_us": fmt, "parse_us": parse, "total_us": fmt + parse}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=500)
    args = parser.parse_args()
    print(f"{'adapter':10s} {'size':11s} {'format µs':>10s} {'parse µs':>10s} {'total µs':>10s}")
    for name in ADAPTERS:
        for size in SIZES:
            r = bench_sigform(name, size, args.repeats)
            print(f"{name:10s} {size:11s} {r['format_us']:10.1f} {r['parse_us']:10.1f} {r['total_us']:10.1f}")


if __name__ == "__main__":
    main()
