"""``sf.evaluate(program, devset, metric=None)``: run a program over labelled examples and score it.

Examples run in parallel worker threads (``concurrency``), each in a copy of the caller's context
(settings, callbacks), with the program's own cache setting -- cache hits are counted, not
hidden. Each example's LM requests, tokens, cost and time are tracked where they happen, failed
calls included. See :mod:`sigform.evaluation.result` for what comes back.
"""

from __future__ import annotations

import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path
from typing import Any

from sigform.errors import ParseError, shorten
from sigform.evaluation.leaks import LabelLeakWarning, program_leaks
from sigform.evaluation.metrics import Metric, TypedMatch, field_types, metric_name, metric_score
from sigform.evaluation.result import EvaluationResult, ExampleRecord
from sigform.predict.batch import worker_count
from sigform.predict.example import Example, Record
from sigform.predict.executors import ThreadExecutor
from sigform.predict.progress import BatchProgress, progress_wanted
from sigform.predict.runstate import track_usage

__all__ = ["MetricErrorWarning", "evaluate", "labelled"]


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


class MetricErrorWarning(UserWarning):
    """The metric raised (or returned a non-number) on some examples; they are not scored."""


def labelled(program: Any, devset: Sequence[Any]) -> list[Example]:
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


def _prediction_dict(prediction: Any) -> dict[str, Any]:
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


def _run_one(
    program: Any, index: int, example: Example, metric: Metric, typed: TypedMatch, custom: bool
) -> ExampleRecord:
    inputs = example.to_dict("inputs")
    gold = example.to_dict("labels")
    record = ExampleRecord(index=index, inputs=inputs, gold=gold, status="ok", score=None)
    started = time.perf_counter()
    prediction: Any = None
    with track_usage() as tracker:
        try:
            prediction = program(**inputs)
        except ParseError as exc:
            record.status, record.score = "parse_error", 0.0
            # the message without its raw-completion line: the completions are kept whole in raw
            lines = [f"{type(exc).__name__}: {exc.summary}", *(f"  - {e}" for e in exc.errors)]
            record.error, record.raw = "\n".join(lines), _raw_texts(exc)
        except Exception as exc:
            record.status, record.score, record.error = "error", 0.0, _error_text(exc)
    record.seconds = time.perf_counter() - started
    usage = tracker.usage
    record.calls, record.prompt_tokens, record.completion_tokens = (
        tracker.requests,
        usage.prompt_tokens,
        usage.completion_tokens,
    )
    record.cost = usage.cost
    record.cache_hit = tracker.requests > 0 and tracker.cache_hits == tracker.requests
    if record.status != "ok":
        return record
    record.prediction = _prediction_dict(prediction)
    try:
        record.field_scores = typed.field_scores(example, prediction)
        record.score = metric_score(metric, example, prediction) if custom else typed(example, prediction)
    except Exception as exc:
        record.status, record.score = "metric_error", None
        record.error = "metric raised " + _error_text(exc, where=True)
    return record


def evaluate(
    program: Any,
    devset: Sequence[Any],
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
    score, and a :class:`MetricErrorWarning` is issued.
    """
    examples = labelled(program, devset)
    width = worker_count(concurrency, "concurrency")
    types = field_types(program)
    custom = metric is not None and not isinstance(metric, TypedMatch)
    typed = (metric if isinstance(metric, TypedMatch) else TypedMatch()).with_types(types)
    scorer: Metric = metric if custom else typed  # type: ignore[assignment]
    leaks = program_leaks(program, [ex.to_dict("inputs") for ex in examples])
    if leaks:
        warnings.warn(
            f"{leaks} of {len(examples)} devset examples are demos of the program (same inputs): their "
            "labels are in the prompt and the score is inflated. Evaluate on examples the demos were "
            "not chosen from.",
            LabelLeakWarning,
            stacklevel=2,
        )
    records: list[ExampleRecord | None] = [None] * len(examples)
    started = time.perf_counter()
    enabled = progress_wanted(progress) and bool(examples)
    bar = BatchProgress(len(examples), enabled=enabled, description="evaluate")
    with bar, ThreadExecutor(width) as pool:
        pending = {
            pool.submit(_run_one, program, i, ex, scorer, typed, custom): i for i, ex in enumerate(examples)
        }
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    record = future.result()
                    records[index] = record
                    tokens = record.prompt_tokens + record.completion_tokens
                    bar.advance(ok=record.status == "ok", tokens=tokens)
        finally:
            for future in pending:
                future.cancel()
    result = EvaluationResult(
        program=_program_name(program),
        metric=metric_name(scorer),
        records=[r for r in records if r is not None],
        seconds=time.perf_counter() - started,
        leaks=leaks,
    )
    if result.metric_errors:
        first = next(r for r in result.records if r.status == "metric_error")
        warnings.warn(
            f"the metric failed on {result.metric_errors} of {result.n} examples (not scored); "
            f"first, example #{first.index}: {shorten(first.error, 300)}",
            MetricErrorWarning,
            stacklevel=2,
        )
    return result


def _program_name(program: Any) -> str:
    signature = getattr(program, "signature", None)
    if signature is not None:
        return f"{type(program).__name__}({signature.signature})"
    return type(program).__name__
