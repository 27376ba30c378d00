"""The shared shape of every optimiser: ``compile(program, trainset=..., valset=...)`` returns an
optimised copy of ``program`` (a normal program: call it, evaluate it, ``save`` it) and leaves
what it did in ``optimizer.report``.

The split is explicit: demos come only from ``trainset``; ``valset`` (when given) is only ever
scored, never shown to the model. Examples present in both are warned about
(:class:`~sigform.evaluation.LabelLeakWarning`), and so is a later ``sf.evaluate`` on examples that
became demos. Every LM call goes through the program's normal LM and cache, so a rerun with the
same seed is free when the cache is on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sigform.evaluation.leaks import warn_overlap
from sigform.evaluation.metrics import Metric, TypedMatch, field_types, metric_score
from sigform.evaluation.runner import evaluate, labelled
from sigform.evaluation.stats import score_of
from sigform.optimize.report import OptimizationReport, Trial
from sigform.predict.context_vars import track_usage
from sigform.predict.example import Example
from sigform.predict.module import Module
from sigform.probes import probe

__all__ = ["Optimizer", "fits", "passes"]


def fits(example: Example, predictor: Any) -> bool:
    """Whether ``example`` can be a demo of ``predictor``: every input and at least one output."""
    signature = predictor.signature
    return all(n in example for n in signature.input_fields) and any(
        n in example for n in signature.output_fields
    )


def as_demo(example: Example, predictor: Any) -> Example:
    """``example`` cut to the predictor's fields, inputs marked."""
    signature = predictor.signature
    names = [n for n in signature.fields if n in example]
    inputs = [n for n in signature.input_fields if n in example]
    return Example({n: example[n] for n in names}).with_inputs(*inputs)


def passes(metric: Metric, example: Example, prediction: object, threshold: float) -> bool:
    """Whether ``prediction`` is good enough to keep as a demo (a metric that raises: no)."""
    score = probe("the metric of a demo candidate", lambda: metric_score(metric, example, prediction), None)
    return score is not None and score >= threshold


class Optimizer:
    """Base class: subclasses implement :meth:`_optimize` on a deep copy of the program."""

    def __init__(self) -> None:
        self.report: OptimizationReport | None = None

    def _describe(self) -> str:
        return type(self).__name__

    def compile(
        self, program: Module, *, trainset: Sequence[object], valset: Sequence[object] | None = None
    ) -> Module:
        """An optimised copy of ``program``; the original is not changed.

        Args:
            trainset: labelled examples demos may be chosen from.
            valset: labelled examples to score candidates (or the result) on; never used as demos.
        """
        if not isinstance(program, Module):
            raise TypeError(f"compile() takes a sigform program (a Module), got {type(program).__name__}")
        train = labelled(program, trainset)
        if not train:
            raise ValueError("compile() needs a non-empty trainset")
        val = labelled(program, valset) if valset is not None else []
        warn_overlap(train, val, "trainset", "valset")
        report = OptimizationReport(self._describe(), trainset=len(train), valset=len(val))
        student = program.deepcopy()
        started = time.perf_counter()
        with track_usage() as tracker:
            self._optimize(student, train, val, report)
        report.seconds = time.perf_counter() - started
        report.calls, report.cache_hits = tracker.requests, tracker.cache_hits
        report.prompt_tokens = tracker.usage.prompt_tokens
        report.completion_tokens = tracker.usage.completion_tokens
        report.demos = {name: _demo_count(p) for name, p in student.named_predictors()}
        self.report = report
        return student

    def _optimize(
        self, student: Module, train: list[Example], val: list[Example], report: OptimizationReport
    ) -> None:
        raise NotImplementedError

    # -- helpers for subclasses -------------------------------------------------------------------
    @staticmethod
    def typed_metric(program: Module, metric: Metric | None) -> Metric:
        """The metric to judge with: the given one, else :class:`TypedMatch` with the program's types."""
        if metric is None or isinstance(metric, TypedMatch):
            return (metric or TypedMatch()).with_types(field_types(program))
        return metric

    @staticmethod
    def score_on(
        program: Module, val: list[Example], metric: Metric | None, name: str, detail: str = "", **kw: Any
    ) -> Trial:
        """Evaluate ``program`` on the validation examples as one trial.

        An example whose metric raised counts as a failure here (an evaluation leaves it out of
        its score): a candidate must not win by making the metric raise on what it got wrong."""
        with track_usage() as tracker:
            result = evaluate(program, val, metric, progress=False, **kw)
        return Trial(
            name,
            detail,
            score=score_of([r.score or 0.0 for r in result.records]),
            calls=tracker.requests,
            tokens=tracker.usage.total_tokens,
            metric_errors=result.metric_errors,
        )


def _demo_count(predictor: Any) -> int:
    selector = getattr(predictor, "demo_selector", None)
    return len(predictor.demos) + (selector.k if selector is not None else 0)
