"""``sf.evaluate(program, devset, metric=None)``: run a program over labelled examples and score it.

Examples run in parallel worker threads (``concurrency``) or, with ``await sf.aevaluate(...)``, as
tasks on the event loop; each in a copy of the caller's context
(settings, callbacks), with the program's own cache setting -- cache hits are counted, not
hidden. Each example's LM requests, tokens, cost and time are tracked where they happen, failed
calls included. See :mod:`sigform.evaluation.result` for what comes back.
"""

from __future__ import annotations

import asyncio
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sigform.errors import ParseError
from sigform.evaluation.leaks import LabelLeakWarning, program_leaks
from sigform.evaluation.metrics import Metric, TypedMatch, field_types, metric_name, metric_score
from sigform.evaluation.result import EvaluationResult, ExampleRecord
from sigform.excerpt import shorten
from sigform.predict.batch import worker_count
from sigform.predict.context_vars import track_usage
from sigform.predict.example import Example
from sigform.predict.executors import ThreadExecutor
from sigform.predict.progress import BatchProgress, progress_wanted
from sigform.signatures.prediction import Record

__all__ = ["Evaluate", "MetricErrorWarning", "aevaluate", "evaluate", "labelled"]


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


class MetricErrorWarning(UserWarning):
    """The metric raised (or returned a non-number) on some examples; they are not scored."""


def labelled(program: object, devset: Sequence[object]) -> list[Example]:
    """The devset as Examples with their inputs marked.

    Examples already marked (``with_inputs``) keep their split; others (and dicts) are split by
    the program's signature: its input fields are inputs, the rest labels.
    """
    if isinstance(devset, (Mapping, Record, str)):
        raise TypeError("evaluate() takes a list of Examples or dicts, not a single one")
    signature = getattr(program, "signature", None)
    names = list(signature.input_fields) if signature is not None else None
    out = []
    for i, item in enumerate(devset):
        if not isinstance(item, (Example, Mapping, Record)):
            raise TypeError(f"devset item #{i} is a {type(item).__name__}; expected an Example or a dict")
        example = item if isinstance(item, Example) else Example(item)
        if example._input_keys is None:
            if names is None:
                raise ValueError(
                    f"devset item #{i} has no inputs marked and {type(program).__name__} has no single "
                    "signature to tell inputs from labels: use Example(...).with_inputs('name', ...)"
                )
            missing = [n for n in names if n not in example]
            if missing:
                raise ValueError(
                    f"devset item #{i} lacks the input(s) {', '.join(missing)}; it has {', '.join(example)}"
                )
            example = example.with_inputs(*names)
        out.append(example)
    return out


def _prediction_dict(prediction: object) -> dict[str, object]:
    if isinstance(prediction, Record):
        return prediction.to_dict()
    if isinstance(prediction, Mapping):
        return dict(prediction)
    return {"output": prediction}


def _error_text(exc: BaseException, *, where: bool = False) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if where:  # a metric bug: say where it raised
        frames = traceback.extract_tb(exc.__traceback__)
        # the metric's own line, not sigform's internals it called into
        outside = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR)]
        if frames:
            last = (outside or frames)[-1]
            text += f" (at {last.filename}:{last.lineno} in {last.name})"
    return text


def _raw_texts(exc: ParseError) -> list[str]:
    texts = [getattr(c, "text", None) or "" for c in exc.completions]
    return texts or ([exc.raw] if exc.raw is not None else [])


class _Measured:
    """Times one program call and tracks its usage; an exception becomes the record's status.

    The same measuring wraps the sync and the async call (``with _Measured(record) as call:``),
    so both paths record failures, tokens and time identically.
    """

    def __init__(self, record: ExampleRecord) -> None:
        self.record = record
        self.prediction: Any = None
        self._usage = track_usage()

    def __enter__(self) -> _Measured:
        self._started = time.perf_counter()
        self._tracker = self._usage.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        self._usage.__exit__(None, None, None)
        record, tracker = self.record, self._tracker
        record.seconds = time.perf_counter() - self._started
        usage = tracker.usage
        record.calls, record.prompt_tokens, record.completion_tokens = (
            tracker.requests,
            usage.prompt_tokens,
            usage.completion_tokens,
        )
        record.cost = usage.cost
        record.cache_hit = tracker.requests > 0 and tracker.cache_hits == tracker.requests
        if isinstance(exc, ParseError):
            record.status, record.score = "parse_error", 0.0
            # the message without its raw-completion line: the completions are kept whole in raw
            lines = [f"{type(exc).__name__}: {exc.summary}", *(f"  - {e}" for e in exc.errors)]
            record.error, record.raw = "\n".join(lines), _raw_texts(exc)
            return True
        if isinstance(exc, Exception):
            record.status, record.score, record.error = "error", 0.0, _error_text(exc)
            return True
        return False  # no exception, or one that must stop the run (KeyboardInterrupt, cancellation)


class _Run:
    """One evaluation's settings, resolved once; shared by :func:`evaluate` and :func:`aevaluate`."""

    def __init__(
        self, program: Any, devset: Sequence[object], metric: Metric | None, concurrency: int | None
    ) -> None:
        self.program = program
        self.examples = labelled(program, devset)
        self.width = worker_count(concurrency, "concurrency")
        self.custom = metric is not None and not isinstance(metric, TypedMatch)
        base = metric if isinstance(metric, TypedMatch) else TypedMatch()
        self.typed = base.with_types(field_types(program))
        self.scorer: Metric = metric if self.custom else self.typed  # type: ignore[assignment]
        self.leaks = program_leaks(program, [ex.to_dict("inputs") for ex in self.examples])
        if self.leaks:
            warnings.warn(
                f"{self.leaks} of {len(self.examples)} devset examples are demos of the program (same "
                "inputs): their labels are in the prompt and the score is inflated. Evaluate on "
                "examples the demos were not chosen from.",
                LabelLeakWarning,
                stacklevel=3,
            )
        self.records: list[ExampleRecord | None] = [None] * len(self.examples)
        self.started = time.perf_counter()

    def progress_bar(self, progress: bool | None) -> BatchProgress:
        enabled = progress_wanted(progress) and bool(self.examples)
        return BatchProgress(len(self.examples), enabled=enabled, description="evaluate")

    def new_record(self, index: int) -> ExampleRecord:
        example = self.examples[index]
        inputs, gold = example.to_dict("inputs"), example.to_dict("labels")
        return ExampleRecord(index=index, inputs=inputs, gold=gold, status="ok", score=None)

    def score(self, call: _Measured, bar: BatchProgress) -> None:
        """Score a finished call (unless it failed), store its record and advance the bar."""
        record = call.record
        if record.status == "ok":
            example, prediction = self.examples[record.index], call.prediction
            record.prediction = _prediction_dict(prediction)
            try:
                record.field_scores = self.typed.field_scores(example, prediction)
                if self.custom:
                    record.score = metric_score(self.scorer, example, prediction)
                else:
                    record.score = self.typed(example, prediction)
            except Exception as exc:
                record.status, record.score = "metric_error", None
                record.error = "metric raised " + _error_text(exc, where=True)
        self.records[record.index] = record
        bar.advance(ok=record.status == "ok", tokens=record.prompt_tokens + record.completion_tokens)

    def result(self) -> EvaluationResult:
        result = EvaluationResult(
            program=_program_name(self.program),
            metric=metric_name(self.scorer),
            records=[r for r in self.records if r is not None],
            seconds=time.perf_counter() - self.started,
            leaks=self.leaks,
        )
        if result.metric_errors:
            first = next(r for r in result.records if r.status == "metric_error")
            warnings.warn(
                f"the metric failed on {result.metric_errors} of {result.n} examples (not scored); "
                f"first, example #{first.index}: {shorten(first.error, 300)}",
                MetricErrorWarning,
                stacklevel=3,
            )
        return result


def _call(run: _Run, index: int) -> _Measured:
    with _Measured(run.new_record(index)) as call:
        call.prediction = run.program(**call.record.inputs)
    return call


def evaluate(
    program: object,
    devset: Sequence[object],
    metric: Metric | None = None,
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
) -> EvaluationResult:
    """Run ``program`` on every example of ``devset`` and score its predictions.

    Args:
        program: any sigform program (``Predict``, ``ChainOfThought``, a ``Module``).
        devset: labelled Examples (or dicts); inputs are the marked ones, else the signature's.
        metric: ``metric(example, prediction) -> bool | float``; default :class:`TypedMatch`, the
            mean typed per-field match. Per-field accuracy is reported either way.
        concurrency: examples in flight (default: the ``num_threads`` setting, else 8).
        progress: show a progress bar (default: in a terminal or notebook, not in CI).

    Returns an :class:`~sigform.evaluation.EvaluationResult`. A metric that raises does not stop
    the run: the example is recorded as ``metric_error`` (with where it raised), left out of the
    score, and a :class:`MetricErrorWarning` is issued. In async code use :func:`aevaluate`.
    """
    run = _Run(program, devset, metric, concurrency)
    with run.progress_bar(progress) as bar, ThreadExecutor(run.width) as pool:
        pending = {pool.submit(_call, run, i) for i in range(len(run.examples))}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    run.score(future.result(), bar)
        finally:
            for future in pending:
                future.cancel()
    return run.result()


async def aevaluate(
    program: object,
    devset: Sequence[object],
    metric: Metric | None = None,
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
) -> EvaluationResult:
    """:func:`evaluate` on the event loop: at most ``concurrency`` ``program.acall`` in flight.

    Same arguments and result as :func:`evaluate`; each example runs in its own task (a copy of
    the caller's context). Cancelling the await cancels the examples still running.
    """
    run = _Run(program, devset, metric, concurrency)
    gate = asyncio.Semaphore(run.width)

    async def one(index: int) -> _Measured:
        async with gate:
            with _Measured(run.new_record(index)) as call:
                call.prediction = await run.program.acall(**call.record.inputs)
            return call

    with run.progress_bar(progress) as bar:
        tasks = [asyncio.ensure_future(one(i)) for i in range(len(run.examples))]
        try:
            for next_done in asyncio.as_completed(tasks):
                run.score(await next_done, bar)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return run.result()


@dataclass(frozen=True)
class Evaluate:
    """A devset and a metric bound once, to score several programs the same way.

    ``Evaluate(devset, metric)(program)`` is ``evaluate(program, devset, metric, ...)``; ``await
    Evaluate(...).acall(program)`` is :func:`aevaluate`. (DSPy users know it as ``dspy.Evaluate``.)
    """

    devset: Sequence[Any]
    metric: Metric | None = None
    concurrency: int | None = None
    progress: bool | None = None

    def __call__(self, program: object) -> EvaluationResult:
        return evaluate(
            program, self.devset, self.metric, concurrency=self.concurrency, progress=self.progress
        )

    async def acall(self, program: object) -> EvaluationResult:
        return await aevaluate(
            program, self.devset, self.metric, concurrency=self.concurrency, progress=self.progress
        )


def _program_name(program: object) -> str:
    signature = getattr(program, "signature", None)
    if signature is not None:
        return f"{type(program).__name__}({signature.signature})"
    return type(program).__name__
