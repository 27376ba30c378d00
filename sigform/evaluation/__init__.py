"""Measuring programs: ``sf.evaluate(program, devset, metric=None)`` and what it returns.

::

    result = sf.evaluate(program, devset)        # typed per-field match by default
    result = await sf.aevaluate(program, devset) # the same on the event loop
    result.score, result.score.low, result.score.high
    result.field_accuracy["amount"]
    better.compare(result)                       # paired difference with its interval

Names load lazily, so ``import sigform`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Comparison": "sigform.evaluation.matching",
    "Evaluate": "sigform.evaluation.runner",
    "EvaluationResult": "sigform.evaluation.result",
    "ExampleRecord": "sigform.evaluation.result",
    "LabelLeakWarning": "sigform.evaluation.leaks",
    "MetricErrorWarning": "sigform.evaluation.runner",
    "MetricValueError": "sigform.errors",
    "Score": "sigform.evaluation.stats",
    "TypedMatch": "sigform.evaluation.metrics",
    "aevaluate": "sigform.evaluation.runner",
    "compare": "sigform.evaluation.matching",
    "evaluate": "sigform.evaluation.runner",
    "paired_difference": "sigform.evaluation.stats",
    "score_of": "sigform.evaluation.stats",
}

__all__ = [
    "Comparison",
    "Evaluate",
    "EvaluationResult",
    "ExampleRecord",
    "LabelLeakWarning",
    "MetricErrorWarning",
    "MetricValueError",
    "Score",
    "TypedMatch",
    "aevaluate",
    "compare",
    "evaluate",
    "paired_difference",
    "score_of",
]

__getattr__, __dir__ = lazy_exports("sigform.evaluation", _EXPORTS, globals())

if TYPE_CHECKING:
    from sigform.errors import MetricValueError
    from sigform.evaluation.leaks import LabelLeakWarning
    from sigform.evaluation.matching import Comparison, compare
    from sigform.evaluation.metrics import TypedMatch
    from sigform.evaluation.result import EvaluationResult, ExampleRecord
    from sigform.evaluation.runner import Evaluate, MetricErrorWarning, aevaluate, evaluate
    from sigform.evaluation.stats import Score, paired_difference, score_of
