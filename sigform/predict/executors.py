"""Where a batch runs: the :class:`Executor` protocol and the local thread executor.

A batch hands each example to ``executor.submit(fn, *args)`` and waits on the returned
:class:`concurrent.futures.Future` -- the standard library's executor interface, so a
``ProcessPoolExecutor``, or a distributed engine's executor, can run batches too.

:class:`ThreadExecutor` (the default) runs each task in a copy of the submitting thread's
context (``contextvars.copy_context()`` per task), so ``sigform.context(...)`` settings, scoped
callbacks and usage tracking follow every example into the worker threads. A plain
``ThreadPoolExecutor`` passed by the user is wrapped the same way. Other executors receive the
task as is: contextvars cannot cross process or machine boundaries, so give such programs their
``lm=`` explicitly (or configure the workers).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Executor", "ThreadExecutor", "as_executor"]

T = TypeVar("T")


@runtime_checkable
class Executor(Protocol):
    """Anything with ``submit(fn, *args, **kwargs) -> Future`` (like ``concurrent.futures``)."""

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]: ...


class ThreadExecutor:
    """Local worker threads; every task runs in a copy of the context that submitted it."""

    def __init__(self, num_threads: int | ThreadPoolExecutor = 8) -> None:
        if isinstance(num_threads, ThreadPoolExecutor):
            self._pool, self._owned = num_threads, False
        else:
            if not isinstance(num_threads, int) or num_threads < 1:
                raise ValueError(f"num_threads must be a positive integer, got {num_threads!r}")
            self._pool = ThreadPoolExecutor(num_threads, thread_name_prefix="sigform-batch")
            self._owned = True

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        ctx = contextvars.copy_context()
        return self._pool.submit(ctx.run, fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the threads (only those this executor created)."""
        if self._owned:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)

    def __enter__(self) -> ThreadExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def as_executor(executor: object) -> Executor:
    """The executor to submit to: stdlib thread pools gain context propagation; others as is."""
    if isinstance(executor, ThreadPoolExecutor):
        return ThreadExecutor(executor)
    if not isinstance(executor, Executor):
        raise TypeError(
            "executor must have submit(fn, *args) -> concurrent.futures.Future, "
            f"got {type(executor).__name__}"
        )
    return executor
