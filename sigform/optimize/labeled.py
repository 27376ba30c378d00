"""``LabeledFewShot(k)``: k labelled training examples as every predictor's demos (seeded).

No LM calls. A predictor gets demos only from examples that carry its inputs and at least one
of its outputs (in a multi-step module, usually the first and last steps); others keep theirs.
"""

from __future__ import annotations

import random

from sigform.evaluation.metrics import Metric
from sigform.optimize.base import Optimizer, as_demo, fits
from sigform.optimize.report import OptimizationReport, Trial
from sigform.predict.example import Example
from sigform.predict.module import Module

__all__ = ["LabeledFewShot", "check_count", "sample_demos"]


def check_count(k: object, name: str = "k") -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {k!r}")
    return k


def sample_demos(predictor: object, train: list[Example], k: int, rng: random.Random) -> list[Example]:
    """Up to ``k`` fitting examples for ``predictor``, drawn without replacement."""
    pool = [ex for ex in train if fits(ex, predictor)]
    chosen = rng.sample(pool, min(k, len(pool)))
    return [as_demo(ex, predictor) for ex in chosen]


class LabeledFewShot(Optimizer):
    """Choose ``k`` demos at random (``seed``) from the trainset.

    Args:
        k: demos per predictor.
        seed: the random seed (the same seed and trainset give the same demos).
        metric: used only to score the result on ``valset`` when one is given.
    """

    def __init__(self, k: int = 4, *, seed: int = 0, metric: Metric | None = None) -> None:
        super().__init__()
        self.k = check_count(k)
        self.seed = seed
        self.metric = metric

    def _describe(self) -> str:
        return f"LabeledFewShot(k={self.k}, seed={self.seed})"

    def _optimize(
        self, student: Module, train: list[Example], val: list[Example], report: OptimizationReport
    ) -> None:
        rng = random.Random(self.seed)
        for name, predictor in student.named_predictors():
            demos = sample_demos(predictor, train, self.k, rng)
            if demos:
                predictor.demos = demos
            else:
                report.notes.append(f"{name}: no training example has its inputs and an output; demos kept")
        trial = Trial(f"{self.k} labelled demos", f"seed {self.seed}", chosen=True)
        if val:
            trial = self.score_on(student, val, self.metric, trial.name, trial.detail)
            trial.chosen = True
        report.trials.append(trial)
