"""Running a program on many inputs: ``program.batch(...)`` and ``await program.abatch(...)``.

Inputs are Examples or dicts. An Example with input keys marked (``with_inputs``) contributes
only those keys; an unmarked Example or a dict is passed whole. Results come back in input order.
A failing example does not stop the run: its slot holds ``None`` and a :class:`Failure` records
the error, until more than ``max_errors`` examples have failed -- then the run stops and
:class:`BatchError` is raised with what was done so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import os
import sys
import threading
import types
import warnings
from collections.abc import Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future, as_completed
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

from sigform.errors import BatchError
from sigform.excerpt import shorten
from sigform.lm.interface import Usage
from sigform.predict.context_vars import track_usage
from sigform.predict.example import Example
from sigform.predict.executors import Executor, ThreadExecutor, as_executor
from sigform.predict.progress import BatchProgress, progress_wanted
from sigform.settings import get_setting
from sigform.signatures.prediction import Record

if TYPE_CHECKING:
    from sigform.predict.checkpoint import ResumedRun

__all__ = ["BatchError", "BatchFailureWarning", "Failure", "run_abatch", "run_batch", "worker_count"]

logger = logging.getLogger("sigform.predict")

DEFAULT_THREADS = 8


@dataclass(frozen=True)
class Failure:
    """One example that failed: its position in the input, the example, and the error."""

    index: int
    example: Example
    error: BaseException

    def __str__(self) -> str:
        return f"#{self.index}: {type(self.error).__name__}: {shorten(str(self.error), 200)}"


class BatchFailureWarning(UserWarning):
    """Examples of a batch failed and came back as ``None`` (the caller did not ask for the
    failures with ``return_failures=True``)."""


@dataclass(slots=True)  # not frozen: built once per example, never changed
class _Outcome:
    value: Any
    error: BaseException | None
    usage: Usage


def _inputs_of(item: object, index: int) -> tuple[Example, dict[str, object]]:
    if isinstance(item, Example):
        example = item
    elif isinstance(item, (Mapping, Record)):
        example = Example(item)
    else:
        raise TypeError(f"batch input #{index} is a {type(item).__name__}; expected an Example or a dict")
    inputs = example.to_dict("inputs") if example._input_keys is not None else example.to_dict()
    return example, inputs


def _prepare(examples: Sequence[object]) -> list[tuple[Example, dict[str, object]]]:
    if isinstance(examples, (Mapping, Record, str)):
        raise TypeError("batch() takes a list of Examples or dicts, not a single one")
    return [_inputs_of(item, i) for i, item in enumerate(examples)]


class _Guard:
    """Counts failures where they happen (in the workers), so that once ``max_errors`` is
    exceeded no queued example starts another LM call, however the threads are scheduled."""

    def __init__(self, max_errors: int | None) -> None:
        self.max_errors = max_errors
        self.failed = 0
        self.stopped = False
        self._lock = threading.Lock()

    def failure(self) -> None:
        with self._lock:
            self.failed += 1
            if self.max_errors is not None and self.failed > self.max_errors:
                self.stopped = True


def _run_one(program: Any, inputs: dict[str, object], guard: _Guard | None = None) -> _Outcome | None:
    # never raises: a failure is data, so a distributed executor can ship it back too;
    # None: skipped because the batch is stopping
    if guard is not None and guard.stopped:
        return None
    with track_usage() as tracker:
        try:
            value = program(**inputs)
        except Exception as exc:
            if guard is not None:
                guard.failure()
            return _Outcome(None, exc, tracker.usage)
    return _Outcome(value, None, tracker.usage)


class _Collector:
    """Results in input order, failures, progress and the max_errors rule."""

    def __init__(
        self,
        items: list[tuple[Example, dict[str, object]]],
        max_errors: int | None,
        bar: BatchProgress,
        resumed: ResumedRun | None = None,
    ):
        self.items = items
        self.results: list[Any] = [None] * len(items)
        self.failures: list[Failure] = []
        self.max_errors = max_errors
        self.bar = bar
        self.resumed = resumed
        if resumed is not None:
            resumed.restore_into(self.results)

    def add(self, index: int, outcome: _Outcome | None) -> bool:
        """Record one outcome; True when the batch must stop."""
        if outcome is None:  # skipped while stopping
            return False
        ok = outcome.error is None
        if ok:
            self.results[index] = outcome.value
            if self.resumed is not None:
                self.resumed.finished(index, outcome.value)  # durable before it counts as done
        else:
            assert outcome.error is not None
            failure = Failure(index, self.items[index][0], outcome.error)
            self.failures.append(failure)
            logger.warning("batch example %s", failure, exc_info=outcome.error)
        self.bar.advance(ok=ok, tokens=outcome.usage.completion_tokens)
        return self.max_errors is not None and len(self.failures) > self.max_errors

    def abort(self) -> BatchError:
        failures = sorted(self.failures, key=lambda f: f.index)
        return BatchError(
            f"batch stopped: {len(failures)} examples failed (max_errors={self.max_errors}); "
            f"{self.bar.done} of {len(self.items)} finished. First failure: {failures[0]}",
            results=self.results,
            failures=failures,
        )

    def finish(self, return_failures: bool) -> list[object] | tuple[list[object], list[Failure]]:
        failures = sorted(self.failures, key=lambda f: f.index)
        if failures:
            logger.warning("batch: %d of %d examples failed", len(failures), len(self.items))
            if not return_failures:  # the log has no handler unless the application adds one
                warnings.warn(
                    BatchFailureWarning(
                        f"{len(failures)} of {len(self.items)} examples failed and came back as None "
                        f"(first: {failures[0]}); pass return_failures=True to get every failure "
                        "with its error, or max_errors= to stop a run that keeps failing"
                    ),
                    stacklevel=_outside_sigform(),
                )
        return (self.results, failures) if return_failures else self.results


# frames a warning skips on its way to the user's line: sigform's own, and asyncio's (abatch
# finishes in a task step)
_INTERNAL = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(asyncio.__file__))


def _outside_sigform() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside sigform (the user's
    ``batch`` line, however deep the sync or async path is)."""
    frame: FrameType | None = sys._getframe(2)  # the warn() caller's caller is level 2
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    return level


def _resumed(
    checkpoint: str | os.PathLike[str] | None, program: object, items: list[Any]
) -> ResumedRun | None:
    if checkpoint is None:
        return None
    from sigform.predict.checkpoint import ResumedRun

    return ResumedRun(checkpoint, program, [inputs for _, inputs in items])


def _resolve_max_errors(max_errors: int | None) -> int | None:
    value = get_setting("max_errors") if max_errors is None else max_errors
    if value is not None and (not isinstance(value, int) or value < 0):
        raise ValueError(f"max_errors must be a non-negative integer or None, got {value!r}")
    return value


def worker_count(value: int | None, name: str) -> int:
    """Workers in flight: the argument, else the ``num_threads`` setting, else the default (an
    explicit 0 is an error, not the default)."""
    width = value if value is not None else get_setting("num_threads") or DEFAULT_THREADS
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise ValueError(f"{name} must be a positive integer, got {width!r}")
    return width


def run_batch(
    program: object,
    examples: Sequence[object],
    *,
    num_threads: int | None = None,
    max_errors: int | None = None,
    return_failures: bool = False,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> list[Any] | tuple[list[Any], list[Failure]]:
    """Run ``program`` on every example in parallel; results in input order.

    Args:
        num_threads: worker threads (default: the ``num_threads`` setting, else 8).
        max_errors: stop once more than this many examples failed (default: the ``max_errors``
            setting, else never stop).
        return_failures: return ``(results, failures)`` instead of ``results``.
        progress: show the progress bar (default: in a terminal or notebook, not in CI).
        executor: where tasks run (see :mod:`sigform.predict.executors`); default local threads.
        checkpoint: a file (JSONL) that records every finished example as it completes; running
            again with the same file skips them (see :mod:`sigform.predict.checkpoint`).
    """
    items = _prepare(examples)
    resumed = _resumed(checkpoint, program, items)
    todo = resumed.todo if resumed is not None else range(len(items))
    limit = _resolve_max_errors(max_errors)
    if executor is None:
        threads = worker_count(num_threads, "num_threads")
        pool: Any = ThreadExecutor(threads)
        owned = True
    else:
        pool, owned = as_executor(executor), False
    # the guard holds a lock: it is shared only with local threads, never shipped elsewhere
    guard = _Guard(limit) if isinstance(pool, ThreadExecutor) else None
    with BatchProgress(len(todo), enabled=progress_wanted(progress) and bool(todo)) as bar:
        collector = _Collector(items, limit, bar, resumed)
        pending: dict[Future[_Outcome | None], int] = {}
        interrupted = False
        try:
            for index in todo:
                inputs = items[index][1]
                args = (program, inputs) if guard is None else (program, inputs, guard)
                pending[pool.submit(_run_one, *args)] = index
            # one waiter per future for the whole run (``wait(FIRST_COMPLETED)`` in a loop installs
            # one on every pending future per completion: O(n²), ~50 µs per example at 1,000)
            # as_completed is a generator (typeshed says Iterator): closing it drops its waiters
            in_order = cast("Generator[Future[_Outcome | None], None, None]", as_completed(list(pending)))
            with contextlib.closing(in_order) as finished:
                for future in finished:
                    index = pending.pop(future)
                    if collector.add(index, future.result()):
                        raise collector.abort()
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            for future in pending:
                future.cancel()
            if owned:
                # Ctrl-C: back to the caller now; the requests in flight end in their threads
                # and their results are dropped (waiting took up to the LM's timeout)
                pool.shutdown(wait=not interrupted, cancel_futures=True)
            if resumed is not None:
                resumed.close()
    return collector.finish(return_failures)


async def run_abatch(
    program: object,
    examples: Sequence[object],
    *,
    concurrency: int | None = None,
    max_errors: int | None = None,
    return_failures: bool = False,
    progress: bool | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> list[Any] | tuple[list[Any], list[Failure]]:
    """Async :func:`run_batch`: at most ``concurrency`` ``program.acall`` calls in flight.

    ``concurrency`` worker tasks take the examples in turn; each example runs in its own copy of
    the caller's context (settings, callbacks) as it was when the batch started.
    """
    items = _prepare(examples)
    resumed = _resumed(checkpoint, program, items)
    todo = resumed.todo if resumed is not None else range(len(items))
    limit = _resolve_max_errors(max_errors)
    width = worker_count(concurrency, "concurrency")
    with BatchProgress(len(todo), enabled=progress_wanted(progress) and bool(todo)) as bar:
        collector = _Collector(items, limit, bar, resumed)
        try:
            # no more workers than examples: concurrency=100_000 for 10 examples made 100,000 tasks
            await _Workers(program, items, todo, collector).run(min(width, len(todo)))
        finally:
            if resumed is not None:
                resumed.close()
    return collector.finish(return_failures)


class _Workers:
    """The examples of :func:`run_abatch`, ``width`` worker tasks at a time.

    A worker that finishes an example sends the next one's request in the same step. (With a
    task per example, the next request waited behind every wake-up queued on the loop: when a
    wave of answers arrived together, each slot's next request went out only after the whole
    wave was read. An object rather than closures: closures calling each other formed a
    reference cycle that kept the batch's examples and results alive until the collector ran.)
    """

    def __init__(
        self,
        program: object,
        items: list[tuple[Example, dict[str, object]]],
        todo: Iterable[int],
        collector: _Collector,
    ) -> None:
        self.program = program
        self.items = items
        self.queue = iter(todo)
        self.collector = collector
        self.stopped = False

    async def run(self, width: int) -> None:
        workers = [asyncio.ensure_future(self.work()) for _ in range(width)]
        everything = asyncio.gather(*workers)
        everything.add_done_callback(_retrieved)
        try:
            # shielded: the caller's cancellation reaches this task at once and stops the workers
            # below; through gather it only cancelled them, and a worker whose example swallowed
            # its CancelledError went on through the rest of the batch
            await asyncio.shield(everything)
        finally:  # a failure, max_errors or the caller's cancellation: stop every worker
            self.stopped = True
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def work(self) -> None:
        for index in self.queue:
            with track_usage() as tracker:
                value, error = await _InOwnContext(self.program, self.items[index][1])
            if self.stopped:
                return
            if self.collector.add(index, _Outcome(value, error, tracker.usage)):
                self.stopped = True
                raise self.collector.abort()


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark the outcome of the workers' gather as seen (raised through its shield, or superseded
    by the caller's cancellation): asyncio would log it as never retrieved."""
    if not future.cancelled():
        future.exception()


class _InOwnContext:
    """``await program.acall(**inputs)`` with every step run in a fresh copy of the current
    context: ``(value, None)``, or ``(None, error)`` if it raised an Exception.

    A worker runs many examples, so context variables an example sets (a request id, a logging
    binding, a span a failure left open) would otherwise reach the worker's next example; a task
    per example isolated them, at the price of a loop iteration before each next request. The
    error is caught here rather than in the worker: its traceback keeps the frames it passed
    through, and the worker's leads to the collector that keeps the error -- a cycle that held
    the whole batch in memory until the garbage collector ran.
    """

    __slots__ = ("inputs", "program")

    def __init__(self, program: object, inputs: dict[str, object]) -> None:
        self.program, self.inputs = program, inputs

    def __await__(self) -> Generator[object, object, tuple[object, Exception | None]]:
        program, inputs = self.program, self.inputs
        context = contextvars.copy_context()
        try:
            steps = context.run(_steps_of, program, inputs)
        except Exception as exc:
            return None, exc
        step: object = None
        value: object = None
        try:
            step = context.run(steps.send, None)
            while True:
                try:
                    value = yield step
                except BaseException as thrown:  # the task's cancellation: the example's to handle
                    step = context.run(steps.throw, thrown)
                else:
                    step = context.run(steps.send, value)
        except StopIteration as stop:
            return stop.value, None
        except Exception as exc:
            return None, exc
        finally:  # a failed step's future holds the error, whose traceback holds this frame
            step = value = None


def _steps_of(program: Any, inputs: dict[str, object]) -> Generator[object, object, object]:
    """The iterator ``await program.acall(**inputs)`` drives (``await``'s error if there is none)."""
    awaitable: object = program.acall(**inputs)
    if isinstance(awaitable, types.GeneratorType) and inspect.isawaitable(awaitable):
        return awaitable  # a generator-based coroutine (@types.coroutine)
    await_method = getattr(type(awaitable), "__await__", None)
    if await_method is None:
        raise TypeError(f"object {type(awaitable).__name__} can't be used in 'await' expression")
    return cast("Generator[Any, Any, Any]", await_method(awaitable))
