"""DSPy side of the few-shot optimisation benchmark (run with the DSPy venv's python).

Reads ``{"api_base", "model", "max_tokens", "k", "jobs": [{"task", "train", "test"}]}`` as JSON
on stdin (examples as in ``benchmarks/real_suite/data``). For each task and each of DSPy 3.4.1's
``LabeledFewShot(k)``, ``BootstrapFewShot(metric, max_bootstrapped_demos=k, max_labeled_demos=k,
max_rounds=1)`` and ``KNNFewShot(k, vectorizer=<TF-IDF>, max_bootstrapped_demos=0,
max_labeled_demos=k)``: compile a ``dspy.Predict`` over the task's fields on ``train`` (the LM
calls and tokens it spends are counted), then run it on ``test``. KNN gets a lexical TF-IDF
vectorizer (numpy; no embedding model or network), the counterpart of sigform's BM25 index, and
no per-call bootstrapping (the same budget as sigform's KNN: no LM calls to choose demos). The
metric is the suite's grading (``benchmarks/real_suite/scoring.py``), the same as sigform's.
Prints one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import dspy
import numpy as np

SUITE = Path(__file__).resolve().parent.parent / "real_suite"


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"real_suite_{name}", SUITE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tasks_mod = load("tasks")
scoring = load("scoring")


def signature_of(task: Any) -> Any:
    fields: dict[str, Any] = {"text": (str, dspy.InputField(desc=task.input_desc))}
    for out in task.outputs:
        fields[out.name] = (
            out.annotation,
            dspy.OutputField(desc=out.desc) if out.desc else dspy.OutputField(),
        )
    return dspy.make_signature(fields, task.instructions)


def tfidf_vectorizer(texts: list[str]) -> Any:
    """A TF-IDF embedder over the training texts' vocabulary (lexical, like BM25)."""
    tokenize = re.compile(r"\w+").findall
    docs = [Counter(tokenize(t.lower())) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
    idf = np.zeros(len(vocab))
    for word, i in vocab.items():
        idf[i] = math.log((1 + len(docs)) / (1 + sum(word in d for d in docs))) + 1

    def embed(batch: list[str]) -> Any:
        out = np.zeros((len(batch), len(vocab)))
        for row, text in enumerate(batch):
            for word, count in Counter(tokenize(text.lower())).items():
                if word in vocab:
                    out[row, vocab[word]] = (1 + math.log(count)) * idf[vocab[word]]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    return dspy.Embedder(embed, caching=False)


def make_strategies(k: int, metric: Any, train: list[Any]) -> dict[str, Any]:
    return {
        "labeled": lambda: dspy.LabeledFewShot(k=k),
        "bootstrap": lambda: dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=k, max_labeled_demos=k, max_rounds=1
        ),
        "knn": lambda: dspy.KNNFewShot(
            k, train, tfidf_vectorizer([e.text for e in train]), max_bootstrapped_demos=0, max_labeled_demos=k
        ),
    }


def run_test(program: Any, task: Any, lm: Any, test: list[dict[str, Any]]) -> list[dict[str, Any]]:
    records = []
    for example in test:
        seen = len(lm.history)
        start = time.perf_counter()
        record: dict[str, Any] = {"id": example["id"]}
        try:
            pred = program(text=example["text"])
            record["value"] = {name: tasks_mod.to_plain(pred[name]) for name in task.output_names}
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
        record["seconds"] = time.perf_counter() - start
        new = lm.history[seen:]
        record["calls"] = len(new)
        record["prompt_tokens"] = sum((e.get("usage") or {}).get("prompt_tokens", 0) or 0 for e in new)
        record["completion_tokens"] = sum(
            (e.get("usage") or {}).get("completion_tokens", 0) or 0 for e in new
        )
        records.append(record)
    return records


def main() -> None:
    job = json.load(sys.stdin)
    k = job["k"]
    lm = dspy.LM(
        job["model"],
        api_base=job["api_base"],
        api_key="local",
        cache=False,
        temperature=0.0,
        max_tokens=job["max_tokens"],
        engine="litellm",
    )
    dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
    out: dict[str, Any] = {}
    for item in job["jobs"]:
        task = tasks_mod.TASKS[item["task"]]
        by_text = {e["text"]: e for e in item["train"]}

        def metric(
            example: Any, pred: Any, trace: Any = None, by_text: dict = by_text, task: Any = task
        ) -> bool:
            value = {name: tasks_mod.to_plain(pred[name]) for name in task.output_names}
            return all(scoring.fields_right(value, by_text[example.text]).values())

        train = [
            dspy.Example(text=e["text"], **task.typed(e["expect"])).with_inputs("text") for e in item["train"]
        ]
        strategies = make_strategies(k, metric, train)
        results = {}
        for name, make in strategies.items():
            seen = len(lm.history)
            start = time.perf_counter()
            optimizer = make()
            student = dspy.Predict(signature_of(task))
            program = (
                optimizer.compile(student) if name == "knn" else optimizer.compile(student, trainset=train)
            )
            spent = lm.history[seen:]
            results[name] = {
                "optimise": {
                    "calls": len(spent),
                    "tokens": sum(
                        ((e.get("usage") or {}).get("prompt_tokens", 0) or 0)
                        + ((e.get("usage") or {}).get("completion_tokens", 0) or 0)
                        for e in spent
                    ),
                    "seconds": time.perf_counter() - start,
                },
                "records": run_test(program, task, lm, item["test"]),
            }
        out[item["task"]] = results
    print(json.dumps({"dspy": dspy.__version__, "tasks": out}))


if __name__ == "__main__":
    main()
