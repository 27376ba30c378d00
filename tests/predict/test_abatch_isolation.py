"""Each example of ``abatch`` is on its own: its context variables and its errors stay with it.

A worker task runs many examples in turn (so that a slot's next request goes out in the step its
answer is read); a task per example used to give every example a fresh copy of the caller's
context, leave no reference cycle behind, make no task beyond the examples and stop at the
caller's cancellation whatever an example did with its own, and the workers must keep all that.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import sys
from typing import Any

import pytest

import sigform as sf
from sigform.lm.interface import Usage
from sigform.predict import Example, Prediction
from sigform.predict.batch import run_abatch
from sigform.predict.context_vars import add_usage, track_usage
from sigform.settings import get_setting

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


class _SetsARequestId:
    """Sets a context variable per call without resetting it, as code does in a task per request."""

    async def acall(self, **inputs: Any) -> Any:
        seen = request_id.get()
        request_id.set(f"example {inputs['x']}")
        add_usage(Usage(prompt_tokens=1, completion_tokens=inputs["x"]))
        await asyncio.sleep(0)
        if inputs["x"] == 2:
            raise ValueError("two")
        return seen, get_setting("max_errors")


def test_an_example_does_not_see_the_context_variables_of_the_one_before() -> None:
    async def main() -> Any:
        with sf.context(max_errors=25), track_usage() as total:
            examples = [{"x": i} for i in range(5)]
            outcome = await run_abatch(
                _SetsARequestId(), examples, concurrency=1, progress=False, return_failures=True
            )
        return outcome, total, request_id.get()

    (results, failures), total, after = asyncio.run(main())
    # one worker ran them all, each in a fresh copy of the caller's context (settings included)
    assert results == [("unset", 25), ("unset", 25), None, ("unset", 25), ("unset", 25)]
    assert [f.index for f in failures] == [2]
    assert after == "unset"
    assert total.usage.completion_tokens == 0 + 1 + 2 + 3 + 4 and total.requests == 5  # usage still adds up


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in Python 3.11")
def test_a_timeout_and_a_child_task_inside_an_example_behave_as_in_a_task_of_its_own() -> None:
    class Program:
        async def acall(self, x: int) -> Any:
            request_id.set(f"example {x}")
            if x == 0:
                async with asyncio.timeout(0.001):  # cancels the current task, then uncancels it
                    await asyncio.sleep(30)
            return await asyncio.create_task(self.child())

        async def child(self) -> str:
            return request_id.get()

    results, failures = asyncio.run(
        run_abatch(Program(), [{"x": 0}, {"x": 1}], concurrency=1, progress=False, return_failures=True)
    )
    assert results == [None, "example 1"]
    assert isinstance(failures[0].error, TimeoutError)


def test_a_program_that_is_not_awaitable_fails_its_examples_with_awaits_own_error() -> None:
    class NotAsync:
        def acall(self, x: int) -> int:
            return x

    results, failures = asyncio.run(run_abatch(NotAsync(), [{"x": 1}], progress=False, return_failures=True))
    assert results == [None]
    assert isinstance(failures[0].error, TypeError) and "can't be used in 'await'" in str(failures[0].error)


class _FailsEveryThird:
    async def acall(self, x: int) -> Prediction:
        await asyncio.sleep(0)
        if x % 3 == 0:
            raise ValueError(f"bad {x}")
        return Prediction(y=x)


def test_failed_examples_leave_no_reference_cycle_holding_the_batch() -> None:
    # the worker caught the error, so its traceback held the worker's frame, which leads to the
    # collector that keeps the error: every example and result stayed alive until gc ran
    program = _FailsEveryThird()
    asyncio.run(run_abatch(program, [{"x": 1}], progress=False))  # first-use imports
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    muted = logging.root.manager.disable
    logging.disable(logging.WARNING)  # pytest's log capture would keep the errors (and all) alive
    try:
        examples = [{"x": i} for i in range(30)]
        results, failures = asyncio.run(
            run_abatch(program, examples, concurrency=4, progress=False, return_failures=True)
        )
        assert len(failures) == 10 and str(failures[0].error) == "bad 0"
        assert failures[0].error.__traceback__ is not None  # the traceback is kept for the user
        del results, failures
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, (Example, Prediction))]
    finally:
        logging.disable(muted)
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


def test_cancelling_an_example_that_handles_its_cancellation_still_stops_the_batch() -> None:
    cleaned: list[int] = []

    class Cleans:
        async def acall(self, x: int) -> int:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await asyncio.sleep(0)  # cleanup that awaits, in the example's own context
                cleaned.append(x)
                raise
            return x

    async def main() -> None:
        examples = [{"x": i} for i in range(10)]
        run = asyncio.ensure_future(run_abatch(Cleans(), examples, concurrency=3, progress=False))
        await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert len(asyncio.all_tasks()) == 1

    asyncio.run(main())
    assert sorted(cleaned) == [0, 1, 2]


def test_a_concurrency_far_above_the_number_of_examples_starts_no_idle_workers() -> None:
    # a worker per unit of concurrency: concurrency=300_000 for 10 examples made 300,000 tasks
    # (11 s of CPU and 300 MB); the task-per-example window never made more than the examples
    most: list[int] = []

    class Counts:
        async def acall(self, x: int) -> int:
            most.append(len(asyncio.all_tasks()))
            await asyncio.sleep(0)
            return x

    examples = [{"x": i} for i in range(3)]
    results = asyncio.run(run_abatch(Counts(), examples, concurrency=100_000, progress=False))
    assert results == [0, 1, 2]
    assert max(most) <= 3 + 1  # the workers, and the task awaiting the batch
    assert asyncio.run(run_abatch(Counts(), [], concurrency=100_000, progress=False)) == []


def test_cancelling_the_batch_stops_it_even_when_an_example_swallows_its_cancellation() -> None:
    # the workers were cancelled only through gather; a worker whose example caught the
    # CancelledError (retry or cleanup code that forgets to re-raise) went on through every
    # remaining example, sending their requests after the caller had cancelled
    started: list[int] = []

    class Swallows:
        async def acall(self, x: int) -> int:
            started.append(x)
            try:
                await asyncio.sleep(30 if x < 4 else 0)  # the first 4 are in flight at the cancel
            except asyncio.CancelledError:
                return -1
            return x

    async def main() -> None:
        examples = [{"x": i} for i in range(40)]
        run = asyncio.ensure_future(run_abatch(Swallows(), examples, concurrency=4, progress=False))
        while len(started) < 4:
            await asyncio.sleep(0)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert len(asyncio.all_tasks()) == 1

    asyncio.run(main())
    assert sorted(started) == [0, 1, 2, 3]
