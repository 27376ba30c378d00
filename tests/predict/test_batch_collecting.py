"""Collecting a threaded batch's results: each future is waited on once, whatever the order.

``concurrent.futures.wait(..., FIRST_COMPLETED)`` in a loop installs a waiter on every pending
future for every completion, so collecting n results cost O(n²): about 50 µs of CPU per example
at 1,000 examples, more than the LM call itself against a fast server.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import sigform as sf
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
