"""Collecting a batch's results without per-example overhead that grows with the batch.

Threads: ``concurrent.futures.wait(..., FIRST_COMPLETED)`` in a loop installed a waiter on every
pending future for every completion, so collecting n results cost O(n²): about 50 µs of CPU per
example at 1,000 examples, more than the LM call itself against a fast server. Async: only the
window of ``concurrency`` tasks exists at a time (not one task per example behind a semaphore).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from concurrent.futures import Future
from typing import Any

import pytest

import sigform as sf
from sigform.predict import BatchError, Example, Prediction
from sigform.predict.batch import run_abatch
from sigform.testing import ScriptedLM


class _CountingWaiters(list[Any]):
    """A future's waiter list that counts how many waiters were ever installed."""

    installed = 0

    def append(self, item: Any) -> None:
        type(self).installed += 1
        super().append(item)


class _OneByOne:
    """Runs tasks in the caller, but completes their futures one at a time, in reverse order,
    each only once the batch is waiting on it."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []
        self.results: list[Any] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future._waiters = _CountingWaiters()  # type: ignore[attr-defined]
        self.futures.append(future)
        self.results.append(fn(*args, **kwargs))
        return future

    def finish_all(self) -> None:
        for future, result in reversed(list(zip(self.futures, self.results, strict=True))):
            while not future._waiters:  # type: ignore[attr-defined]  # the batch waits on it
                threading.Event().wait(0.001)
            threading.Event().wait(0.005)  # and has settled into waiting (no timing is asserted)
            future.set_result(result)


def test_each_future_gets_one_waiter_and_results_keep_input_order() -> None:
    lm = ScriptedLM.by_input(lambda text: "[[ ## y ## ]]\n" + text.split("[[ ## x ## ]]")[1].split()[0])
    program = sf.Predict("x: int -> y: int", lm=lm)
    executor = _OneByOne()
    _CountingWaiters.installed = 0
    finisher = threading.Thread(target=lambda: (started.wait(), executor.finish_all()))
    started = threading.Event()
    finisher.start()
    original = executor.submit

    def submit(fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = original(fn, *args, **kwargs)
        if len(executor.futures) == 20:
            started.set()
        return future

    executor.submit = submit  # type: ignore[method-assign]
    results = program.batch([{"x": i} for i in range(20)], executor=executor, progress=False)
    finisher.join(timeout=30)
    assert [r.y for r in results] == list(range(20))
    # one waiter per future for the whole run; the old loop installed 20 + 19 + ... + 1 = 210
    assert _CountingWaiters.installed == 20


class _Slow:
    """An async program that records how many example tasks exist while it runs."""

    def __init__(self) -> None:
        self.most_tasks = 0
        self.started = 0
        self.cancelled = 0

    async def acall(self, **inputs: Any) -> Any:
        self.started += 1
        self.most_tasks = max(self.most_tasks, len(asyncio.all_tasks()))
        try:
            await asyncio.sleep(0.001 * (inputs["x"] % 3))
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if inputs["x"] == 13:
            raise ValueError("thirteen")
        return inputs["x"] * 2


def test_abatch_keeps_only_its_window_of_tasks_alive() -> None:
    # one task per example up front (500 tasks for 500 examples) cost wake-ups per example
    slow = _Slow()
    results, failures = asyncio.run(
        run_abatch(slow, [{"x": i} for i in range(200)], concurrency=8, progress=False, return_failures=True)
    )
    assert results == [None if i == 13 else 2 * i for i in range(200)]
    assert [f.index for f in failures] == [13] and str(failures[0].error) == "thirteen"
    assert slow.most_tasks <= 8 + 1  # the window, and the task awaiting the batch


def test_abatch_stops_starting_examples_once_max_errors_is_exceeded() -> None:
    slow = _Slow()
    with pytest.raises(BatchError):
        asyncio.run(run_abatch(slow, [{"x": 13}] * 50, concurrency=4, max_errors=1, progress=False))
    assert slow.started <= 4 + 1  # the window at the second failure, and the one it started


def test_cancelling_abatch_cancels_the_examples_in_flight() -> None:
    slow = _Slow()

    async def main() -> None:
        run = asyncio.ensure_future(run_abatch(slow, [{"x": 2}] * 20, concurrency=5, progress=False))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert len(asyncio.all_tasks()) == 1  # only this one: nothing left running

    asyncio.run(main())
    assert slow.started == 5 and slow.cancelled == 5


def test_abatch_leaves_no_reference_cycles_behind() -> None:
    # its window is an object, not two closures calling each other: those formed a cycle that
    # kept every example and result of the batch alive until the garbage collector ran
    lm = ScriptedLM.by_input(lambda text: "[[ ## y ## ]]\n" + text.split("[[ ## x ## ]]")[1].split()[0])
    program = sf.Predict("x: int -> y: int", lm=lm)
    asyncio.run(program.abatch([{"x": 1}], progress=False))  # first-use caches and imports
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    try:
        results = asyncio.run(program.abatch([{"x": i} for i in range(30)], concurrency=4, progress=False))
        assert [r.y for r in results] == list(range(30))
        del results
        gc.collect()
        # other threads may leave garbage of their own meanwhile: only the batch's counts
        left = [o for o in gc.garbage if isinstance(o, (Example, Prediction))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


def test_a_finished_abatch_example_starts_the_next_before_the_other_answers_are_read() -> None:
    # answers that arrive together used to be read one after another before any slot started
    # its next example (a done callback and a new task, each queued behind every wake-up), so
    # the last slot's next request waited for the whole wave; a worker starts it in the same step
    log: list[str] = []
    gates: dict[int, asyncio.Future[None]] = {}

    class Gated:
        async def acall(self, **inputs: Any) -> Any:
            x = inputs["x"]
            log.append(f"start {x}")
            gates[x] = asyncio.get_running_loop().create_future()
            await gates[x]
            log.append(f"end {x}")
            return x

    async def main() -> list[Any]:
        examples = [{"x": i} for i in range(8)]
        run = asyncio.ensure_future(run_abatch(Gated(), examples, concurrency=4, progress=False))
        for wave in (range(4), range(4, 8)):
            while not all(i in gates for i in wave):
                await asyncio.sleep(0)
            for i in wave:  # the whole wave answers in one step of the loop
                gates[i].set_result(None)
        return await run

    assert asyncio.run(main()) == list(range(8))
    assert log[4:12] == ["end 0", "start 4", "end 1", "start 5", "end 2", "start 6", "end 3", "start 7"]
