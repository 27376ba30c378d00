"""DSPy side of the few-shot optimisation benchmark (run with the DSPy venv's python).

Reads ``{"api_base", "model", "max_tokens", "adapter", "k", "jobs": [{"task", "train", "test"}]}``
as JSON on stdin (examples as in ``benchmarks/real_suite/data``). For each task and each of DSPy
3.4.1's ``LabeledFewShot(k)``, ``BootstrapFewShot(metric, max_bootstrapped_demos=k,
max_labeled_demos=k, max_rounds=1)`` and ``KNNFewShot(k, vectorizer=<TF-IDF>,
max_bootstrapped_demos=0, max_labeled_demos=k)``: compile a ``dspy.Predict`` over the task's
fields on ``train`` (the LM calls and tokens it spends are counted), then run it on ``test``. KNN
gets a lexical TF-IDF vectorizer (numpy; no embedding model or network), the counterpart of
sigform's BM25 index, and no per-call bootstrapping (the same budget as sigform's KNN: no LM calls
to choose demos). The metric is the suite's grading (``benchmarks/real_suite/scoring.py``), the same
as sigform's. A line per task and strategy goes to the job's ``progress`` file if given (the
parent captures stderr until the end); prints one JSON line.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections import Counter
from typing import Any

import dspy
import numpy as np
from suite_client import configure, load_suite, run_examples, signature_of, tasks, usage_of

scoring = load_suite("scoring")


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


def demo_ids(program: Any, ids_by_text: dict[str, str]) -> list[str]:
    """The train ids of a compiled program's fixed demos (none for KNN: it chooses per call)."""
    return [ids_by_text.get(getattr(d, "text", ""), "?") for d in getattr(program, "demos", None) or []]


def main() -> None:
    job = json.load(sys.stdin)
    k = job["k"]
    lm = configure(job, job.get("adapter", "chat"))
    out: dict[str, Any] = {}
    for item in job["jobs"]:
        task = tasks.TASKS[item["task"]]
        by_text = {e["text"]: e for e in item["train"]}
        ids_by_text = {e["text"]: e["id"] for e in item["train"]}

        def metric(
            example: Any, pred: Any, trace: Any = None, by_text: dict = by_text, task: Any = task
        ) -> bool:
            value = {name: tasks.to_plain(pred[name]) for name in task.output_names}
            return all(scoring.fields_right(value, by_text[example.text]).values())

        train = [
            dspy.Example(text=e["text"], **task.typed(e["expect"])).with_inputs("text") for e in item["train"]
        ]
        results = {}
        for name, make in make_strategies(k, metric, train).items():
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
                    "tokens": usage_of(spent, "prompt_tokens") + usage_of(spent, "completion_tokens"),
                    "seconds": time.perf_counter() - start,
                },
                "demos": demo_ids(program, ids_by_text),
                "records": run_examples(program, task, lm, item["test"]),
            }
            right = sum(
                bool(r.get("value")) and all(scoring.fields_right(r["value"], e).values())
                for r, e in zip(results[name]["records"], item["test"], strict=True)
            )
            if job.get("progress"):
                with open(job["progress"], "a", encoding="utf-8") as fh:
                    fh.write(
                        f"dspy {item['task']} {name}: optimise {len(spent)} calls; "
                        f"{right}/{len(item['test'])} right; {time.perf_counter() - start:.0f} s\n"
                    )
        out[item["task"]] = results
    print(json.dumps({"dspy": dspy.__version__, "tasks": out}))


if __name__ == "__main__":
    main()
