"""``RandomSearch``: try several demo sets, score each on a validation split, keep the best.

Candidates are the program as given plus ``num_candidates`` random ``k``-subsets of a pool per
predictor: the labelled training examples (``pool="labeled"``) or the traces of one
:class:`BootstrapFewShot` run (``pool="bootstrap"``). Each is evaluated on the validation
examples -- ``valset`` when given, else a seeded ``val_fraction`` of the trainset that is then
kept out of the pool -- and the best score wins (the earlier candidate on a tie). The report
lists every candidate's score with its interval and the distribution of scores. The winner's
validation score was used to choose it, so it is optimistic: measure on a held-out devset.
"""

from __future__ import annotations

import random
from typing import Literal

from sigform.evaluation.metrics import Metric
from sigform.optimize.base import Optimizer, as_demo, fits
from sigform.optimize.bootstrap import BootstrapFewShot
from sigform.optimize.labeled import check_count
from sigform.optimize.report import OptimizationReport
from sigform.predict.example import Example
from sigform.predict.module import Module

__all__ = ["RandomSearch"]

Pool = Literal["labeled", "bootstrap"]


class RandomSearch(Optimizer):
    """Score random demo sets on a validation split and keep the best (see the module docstring).

    Args:
        metric: as for :func:`sigform.evaluate` (default: typed per-field match).
        k: demos per predictor in each candidate.
        num_candidates: random demo sets to try (besides the program as given).
        pool: where candidates' demos come from: ``"labeled"`` or ``"bootstrap"``.
        pool_size: bootstrapped traces to collect per predictor for ``pool="bootstrap"``.
        val_fraction: the share of the trainset held out for scoring when no valset is given.
        concurrency: examples evaluated in parallel.
        seed: the random seed.
    """

    def __init__(
        self,
        metric: Metric | None = None,
        *,
        k: int = 4,
        num_candidates: int = 6,
        pool: Pool = "labeled",
        pool_size: int = 12,
        val_fraction: float = 0.3,
        concurrency: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if pool not in ("labeled", "bootstrap"):
            raise ValueError(f"pool must be 'labeled' or 'bootstrap', got {pool!r}")
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be between 0 and 1, got {val_fraction!r}")
        self.metric = metric
        self.k = check_count(k)
        self.num_candidates = check_count(num_candidates, "num_candidates")
        self.pool = pool
        self.pool_size = check_count(pool_size, "pool_size")
        self.val_fraction = val_fraction
        self.concurrency = concurrency
        self.seed = seed

    def _describe(self) -> str:
        return (
            f"RandomSearch(k={self.k}, num_candidates={self.num_candidates}, pool={self.pool!r}, "
            f"seed={self.seed})"
        )

    def _optimize(
        self, student: Module, train: list[Example], val: list[Example], report: OptimizationReport
    ) -> None:
        rng = random.Random(self.seed)
        if not val:
            train, val = self._split(train, rng)
            report.trainset, report.valset = len(train), len(val)
            report.notes.append(f"no valset given: {len(val)} training examples held out for scoring")
        pools = self._pools(student, train, report)
        candidates: list[tuple[str, dict[str, list[Example]]]] = [("as given", {})]
        for i in range(self.num_candidates):
            chosen = {
                name: [pool[j] for j in sorted(rng.sample(range(len(pool)), min(self.k, len(pool))))]
                for name, pool in pools.items()
                if pool
            }
            candidates.append((f"candidate {i + 1}", chosen))
        best: tuple[float, int] | None = None
        for index, (label, demos) in enumerate(candidates):
            program = student.deepcopy()
            for name, predictor in program.named_predictors():
                if name in demos:
                    predictor.demos = demos[name]
            detail = (
                ", ".join(f"{n}: {len(d)} {self.pool} demos" for n, d in demos.items()) or "current demos"
            )
            trial = self.score_on(program, val, self.metric, label, detail, concurrency=self.concurrency)
            report.trials.append(trial)
            score = float(trial.score) if trial.score is not None and trial.score.n else -1.0
            if best is None or score > best[0]:
                best = (score, index)
        assert best is not None
        report.trials[best[1]].chosen = True
        for name, predictor in student.named_predictors():
            if name in candidates[best[1]][1]:
                predictor.demos = candidates[best[1]][1][name]
        raised = [
            f"{t.name}: {t.metric_errors} of {t.score.n}"
            for t in report.trials
            if t.metric_errors and t.score is not None
        ]
        if raised:
            report.notes.append(
                "the metric raised on some examples, counted as failures when choosing ("
                + "; ".join(raised)
                + "): fix the metric, or its errors may hide what a candidate got wrong"
            )
        report.notes.append(
            "the chosen candidate's score was used to choose it: confirm on a held-out devset"
        )

    def _split(self, train: list[Example], rng: random.Random) -> tuple[list[Example], list[Example]]:
        shuffled = list(train)
        rng.shuffle(shuffled)
        held = max(1, round(len(shuffled) * self.val_fraction))
        if held >= len(shuffled):
            raise ValueError(
                f"a trainset of {len(train)} is too small to hold out validation examples; pass valset="
            )
        return shuffled[held:], shuffled[:held]

    def _pools(
        self, student: Module, train: list[Example], report: OptimizationReport
    ) -> dict[str, list[Example]]:
        if self.pool == "labeled":
            return {
                name: [as_demo(ex, p) for ex in train if fits(ex, p)]
                for name, p in student.named_predictors()
            }
        booster = BootstrapFewShot(self.metric, k=self.pool_size, seed=self.seed)
        boosted = booster.compile(student, trainset=train)
        assert booster.report is not None
        for trial in booster.report.trials[:-1]:
            trial.name = f"bootstrap pool, {trial.name}"
            report.trials.append(trial)
        return {name: list(p.demos) for name, p in boosted.named_predictors()}
