"""What an evaluation returns: per-example records and their summary with intervals.

Every example ends in one status: ``ok`` (the program answered and the metric scored it),
``parse_error`` (the model's answer could not be read into the declared types), ``error`` (any
other failure: the LM call, a program bug) or ``metric_error`` (the metric raised or returned a
non-number). Parse and program failures score 0 in the overall score -- an unanswered example is
not a right one -- and are counted and listed on their own; ``answered_score`` is the score over
the examples that got an answer. Metric errors are a bug in the evaluation, not in the program:
they are left out of every score and reported.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from sigform.evaluation.stats import Score, paired_difference, score_of

__all__ = ["EvaluationResult", "ExampleRecord", "Status"]

Status = Literal["ok", "parse_error", "error", "metric_error"]
FAILED: tuple[Status, ...] = ("parse_error", "error")


@dataclass
class ExampleRecord:
    """One example's outcome (see the module docstring for ``status``).

    ``raw`` holds the model's completions when the answer could not be parsed; ``calls`` the LM
    requests the example took (re-asks and fallbacks included), ``cache_hit`` whether every one
    of them came from the cache.
    """

    index: int
    inputs: dict[str, Any]
    gold: dict[str, Any]
    status: Status
    score: float | None
    prediction: dict[str, Any] | None = None
    field_scores: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    raw: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    cache_hit: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (typed values become JSON values)."""
        from pydantic_core import to_jsonable_python

        return {k: to_jsonable_python(v, fallback=repr) for k, v in asdict(self).items()}


@dataclass
class EvaluationResult:
    """The outcome of :func:`sigform.evaluate`; print it, show it in a notebook, or export it.

    ``score`` is a :class:`~sigform.evaluation.Score` -- a float with ``low``/``high`` 95% bounds.
    ``field_accuracy`` maps each labelled field to its Score (typed comparison), whatever the
    metric. ``compare(baseline)`` gives the paired difference with its interval.
    """

    program: str
    metric: str
    records: list[ExampleRecord]
    seconds: float
    leaks: int = 0

    # -- scores ---------------------------------------------------------------------------------
    def _scored(self) -> list[ExampleRecord]:
        return [r for r in self.records if r.status != "metric_error"]

    @cached_property
    def score(self) -> Score:
        """Mean score over every example but metric errors (failures count 0), with its interval."""
        return score_of([r.score or 0.0 for r in self._scored()])

    @cached_property
    def answered_score(self) -> Score:
        """Mean score over the examples the program answered (status ``ok``)."""
        return score_of([r.score or 0.0 for r in self.records if r.status == "ok"])

    @cached_property
    def field_accuracy(self) -> dict[str, Score]:
        """Each labelled field's typed accuracy over the scored examples (failures count 0)."""
        names: list[str] = []
        for record in self.records:
            for name in record.field_scores or record.gold:
                if name not in names:
                    names.append(name)
        return {name: score_of([r.field_scores.get(name, 0.0) for r in self._scored()]) for name in names}

    def compare(self, baseline: EvaluationResult) -> Score:
        """How much better this result is than ``baseline`` on the same examples: the mean
        per-example difference with a paired-bootstrap 95% interval (failures count 0)."""
        mine = {r.index: r for r in self._scored()}
        theirs = {r.index: r for r in baseline._scored()}
        if len(self.records) != len(baseline.records) or any(
            a.inputs != b.inputs for a, b in zip(self.records, baseline.records, strict=True)
        ):
            raise ValueError("compare() needs two evaluations of the same devset (same examples, same order)")
        common = sorted(mine.keys() & theirs.keys())
        return paired_difference(
            [mine[i].score or 0.0 for i in common], [theirs[i].score or 0.0 for i in common]
        )

    # -- counts ---------------------------------------------------------------------------------
    def count(self, status: Status) -> int:
        return sum(r.status == status for r in self.records)

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def parse_errors(self) -> int:
        return self.count("parse_error")

    @property
    def errors(self) -> int:
        return self.count("error")

    @property
    def metric_errors(self) -> int:
        return self.count("metric_error")

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.records)

    @property
    def cache_hits(self) -> int:
        return sum(r.calls for r in self.records if r.cache_hit)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.records)

    @property
    def completion_tokens(self) -> int:
        return sum(r.completion_tokens for r in self.records)

    @property
    def cost(self) -> float | None:
        """Total cost in USD where the provider's price is known, else None."""
        costs = [r.cost for r in self.records if r.cost is not None]
        return sum(costs) if costs else None

    def failures(self) -> list[ExampleRecord]:
        """Records that did not end in a score: parse errors, errors and metric errors."""
        return [r for r in self.records if r.status != "ok"]

    def worst(self, n: int = 5) -> list[ExampleRecord]:
        """The ``n`` lowest-scoring records (failures first)."""
        order = {"metric_error": 0, "error": 1, "parse_error": 2, "ok": 3}
        return sorted(self.records, key=lambda r: (order[r.status], r.score or 0.0, r.index))[:n]

    # -- export ---------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The headline figures as a JSON-ready dict."""
        return {
            "program": self.program,
            "metric": self.metric,
            "n": self.n,
            "score": self.score.to_dict(),
            "answered_score": self.answered_score.to_dict(),
            "field_accuracy": {k: v.to_dict() for k, v in self.field_accuracy.items()},
            "parse_errors": self.parse_errors,
            "errors": self.errors,
            "metric_errors": self.metric_errors,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "seconds": self.seconds,
            "leaked_examples": self.leaks,
        }

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per example (inputs, gold, prediction, status, scores, usage)."""
        return [r.to_dict() for r in self.records]

    def to_json(self, path: str | Path | None = None) -> str:
        """The summary and the records as JSON; also written to ``path`` when given."""
        payload = {"summary": self.summary(), "records": self.to_records()}
        text = json.dumps(payload, indent=2, ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame (one row per example; needs pandas installed)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
        rows = []
        for record in self.to_records():
            nested = ("inputs", "gold", "prediction", "field_scores")
            row = {k: v for k, v in record.items() if k not in nested}
            row.update({f"input.{k}": v for k, v in record["inputs"].items()})
            row.update({f"gold.{k}": v for k, v in record["gold"].items()})
            row.update({f"pred.{k}": v for k, v in (record["prediction"] or {}).items()})
            row.update({f"score.{k}": v for k, v in record["field_scores"].items()})
            rows.append(row)
        return pd.DataFrame(rows)

    # -- display --------------------------------------------------------------------------------
    def __str__(self) -> str:
        from sigform.evaluation.display import text_summary

        return text_summary(self)

    def __repr__(self) -> str:
        return (
            f"EvaluationResult(score={self.score.percent()}, n={self.n}, parse_errors={self.parse_errors}, "
            f"errors={self.errors}, metric_errors={self.metric_errors})"
        )

    def __rich__(self) -> Any:
        from sigform.evaluation.display import rich_summary

        return rich_summary(self)

    def _repr_html_(self) -> str:
        from sigform.evaluation.display import html_summary

        return html_summary(self)
