"""``BootstrapFewShot``: demos from the program's own successful runs.

A teacher (the program itself, the same program on another LM, or any program with the same
predictor names) runs on training examples; when its final answer passes the metric, every
predictor call of that run becomes a demo for the predictor of the same name -- so a multi-step
module gets demos for its intermediate steps, which no labelled example has. Runs stop once
every predictor has ``k`` demos. Examples that failed are retried in later rounds (at most
``max_rounds``) with a new rollout id and temperature 1.0, so a retry is a new sample while a
rerun of the whole compile is answered from the cache.

A teacher made from the program itself gets ``teacher_demos`` labelled training examples as
demos where it has none (a small model rarely answers well zero-shot), never the example it is
running on (its label would be in the prompt). Slots no passing trace filled are filled with
labelled examples (``fill_labeled``), so the result has ``k`` demos where the data allows.
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from typing import Any

from sigform.evaluation.leaks import fingerprint
from sigform.evaluation.metrics import Metric
from sigform.optimize.base import Optimizer, as_demo, fits, passes
from sigform.optimize.labeled import check_count, sample_demos
from sigform.optimize.report import OptimizationReport, Trial
from sigform.optimize.trace import TraceStep, tracing
from sigform.predict.context_vars import rollout, track_usage
from sigform.predict.example import Example
from sigform.predict.module import Module
from sigform.probes import probe

__all__ = ["BootstrapFewShot"]


class BootstrapFewShot(Optimizer):
    """Keep the traces of teacher runs that pass ``metric`` as demos.

    Args:
        metric: ``metric(example, prediction) -> bool | float``; default
            :class:`~sigform.evaluation.TypedMatch` (the typed per-field match).
        k: demos per predictor.
        fill_labeled: fill the slots no passing trace filled with labelled training examples.
        teacher: ``None`` (the program itself), an LM (the program on that LM), or a program
            with the same predictor names.
        teacher_demos: labelled demos given to a teacher built here (``None`` or an LM) for the
            predictors that have none (0: run it as it is).
        max_rounds: passes over the failed examples (round 1 at the program's settings).
        threshold: the metric score a run needs to be kept (default 1.0: fully right).
        max_examples: at most this many training examples are run per round (default: all).
        seed: order in which training examples are tried.
    """

    def __init__(
        self,
        metric: Metric | None = None,
        *,
        k: int = 4,
        fill_labeled: bool = True,
        teacher: object = None,
        teacher_demos: int = 4,
        max_rounds: int = 1,
        threshold: float = 1.0,
        max_examples: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.metric = metric
        self.k = check_count(k)
        self.fill_labeled = fill_labeled
        self.teacher_demos = check_count(teacher_demos, "teacher_demos")
        if not isinstance(max_rounds, int) or max_rounds < 1:
            raise ValueError(f"max_rounds must be a positive integer, got {max_rounds!r}")
        if max_examples is not None and (not isinstance(max_examples, int) or max_examples < 1):
            raise ValueError(f"max_examples must be a positive integer or None, got {max_examples!r}")
        self.teacher = teacher
        self.max_rounds = max_rounds
        self.threshold = threshold
        self.max_examples = max_examples
        self.seed = seed

    def _describe(self) -> str:
        return f"BootstrapFewShot(k={self.k}, max_rounds={self.max_rounds}, seed={self.seed})"

    def _teacher_for(self, student: Module, train: list[Example]) -> tuple[Module, bool]:
        """The teacher, and whether it was built here (then its labelled demos may be adjusted)."""
        teacher = self.teacher
        if teacher is None or not isinstance(teacher, Module):
            built = student.deepcopy()
            if teacher is not None:
                built.set_lm(teacher)  # an LM: the same program on a (usually stronger) model
            rng = random.Random(self.seed)
            for predictor in built.predictors():
                if not predictor.demos and self.teacher_demos:
                    predictor.demos = sample_demos(predictor, train, self.teacher_demos, rng)
            return built, True
        if isinstance(teacher, Module):
            mine = [n for n, _ in student.named_predictors()]
            theirs = [n for n, _ in teacher.named_predictors()]
            if mine != theirs:
                raise ValueError(
                    f"the teacher's predictors ({', '.join(theirs)}) differ from the program's "
                    f"({', '.join(mine)})"
                )
        return teacher, False

    def _optimize(
        self, student: Module, train: list[Example], val: list[Example], report: OptimizationReport
    ) -> None:
        metric = self.typed_metric(student, self.metric)
        teacher, built = self._teacher_for(student, train)
        names = {id(p): name for name, p in teacher.named_predictors()}
        targets = dict(student.named_predictors())
        found: dict[str, list[Example]] = {name: [] for name in targets}
        seen: dict[str, set[str]] = {name: set() for name in targets}
        pending = list(train)
        random.Random(self.seed).shuffle(pending)

        def full() -> bool:
            return all(len(demos) >= self.k for demos in found.values())

        for round_no in range(self.max_rounds):
            if full() or not pending:
                break
            batch = pending[: self.max_examples] if self.max_examples else pending
            failed: list[Example] = []
            kept = tried = 0
            scope = (
                rollout(rollout_id=f"bootstrap-{round_no}", temperature=1.0) if round_no else nullcontext()
            )
            with scope, track_usage() as tracker:
                for example in batch:
                    if full():
                        break
                    tried += 1
                    steps = self._run(teacher, example, metric, built)
                    if steps is None:
                        failed.append(example)
                        continue
                    kept += 1
                    for module, inputs, outputs in steps:
                        name = names.get(id(module))
                        if name is not None:
                            self._keep(targets[name], inputs, outputs, found[name], seen[name])
            pending = failed + pending[len(batch) :]
            report.trials.append(
                Trial(
                    f"round {round_no + 1}",
                    f"{kept} of {tried} teacher runs passed the metric",
                    calls=tracker.requests,
                    tokens=tracker.usage.total_tokens,
                )
            )
        rng = random.Random(self.seed)
        for name, predictor in targets.items():
            demos = found[name] + self._labeled_fill(predictor, train, len(found[name]), seen[name], rng)
            traced = len(found[name])
            if len(demos) > traced:
                report.notes.append(f"{name}: {traced} bootstrapped + {len(demos) - traced} labelled demos")
            if demos:
                predictor.demos = demos
            else:
                report.notes.append(f"{name}: no teacher run passed the metric; its demos were kept")
        final = Trial(
            "bootstrapped program", ", ".join(f"{n}: {len(d)} traces" for n, d in found.items()), chosen=True
        )
        if val:
            final = self.score_on(student, val, self.metric, final.name, final.detail)
            final.chosen = True
        report.trials.append(final)

    def _labeled_fill(
        self, predictor: Any, train: list[Example], have: int, seen: set[str], rng: random.Random
    ) -> list[Example]:
        """Labelled demos for the slots no passing trace filled (none unless ``fill_labeled``)."""
        missing = self.k - have
        if not self.fill_labeled or missing <= 0:
            return []
        names = list(predictor.signature.input_fields)
        extra = [ex for ex in train if fits(ex, predictor) and fingerprint(ex, names) not in seen]
        return [as_demo(ex, predictor) for ex in rng.sample(extra, min(missing, len(extra)))]

    def _run(self, teacher: Module, example: Example, metric: Metric, built: bool) -> list[TraceStep] | None:
        """The teacher's trace on ``example`` when its answer passes the metric, else None."""
        hidden = self._hide_own_label(teacher, example) if built else []
        try:
            with tracing() as steps:
                # a teacher that fails on an example gives no demo (logged at debug level)
                inputs = example.to_dict("inputs")
                answered = probe("the teacher on a training example", lambda: (teacher(**inputs),), None)
                if answered is None:
                    return None
                prediction = answered[0]
            return steps if passes(metric, example, prediction, self.threshold) else None
        finally:
            for predictor, demos in hidden:
                predictor.demos = demos

    @staticmethod
    def _hide_own_label(teacher: Module, example: Example) -> list[tuple[Any, list[Example]]]:
        """Take ``example`` out of the teacher's demos for its own run; returns what to restore."""
        key = fingerprint(example.to_dict("inputs"))
        changed = []
        for predictor in teacher.predictors():
            names = list(predictor.signature.input_fields)
            kept = [d for d in predictor.demos if fingerprint(d, names) != key]
            if len(kept) != len(predictor.demos):
                changed.append((predictor, predictor.demos))
                predictor.demos = kept
        return changed

    def _keep(
        self, predictor: Any, inputs: dict[str, object], outputs: Any, demos: list[Example], seen: set[str]
    ) -> None:
        if len(demos) >= self.k:
            return
        key = fingerprint(inputs)
        if key in seen:
            return
        signature = predictor.signature
        values = {**inputs, **{n: outputs[n] for n in signature.output_fields if n in outputs}}
        seen.add(key)
        demos.append(Example(values).with_inputs(*inputs))
