"""Calling user code from the async tool loop, and the async loop from synchronous callers.

User callables (tools, hooks, approvers, ``requires_approval`` predicates) may be sync or async.
Sync ones run in a worker thread so a slow tool or a blocking terminal prompt never stalls the
event loop (other safe tools, subprocess pipes); ``asyncio.to_thread`` copies contextvars, so
``sigform.context(...)`` settings stay visible inside them.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from sigform import runtime

__all__ = ["call_inline", "invoke", "run_sync"]

T = TypeVar("T")


async def invoke(func: Callable[..., Any], *args: object, **kwargs: object) -> object:
    """Call ``func`` (sync in a worker thread, async awaited) and await an awaitable result."""
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__):
        result = await func(*args, **kwargs)
    else:
        result = await asyncio.to_thread(func, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def call_inline(func: Callable[..., object], *args: object, **kwargs: object) -> Any:
    """Call a quick callable on the loop thread (predicates, formatters); await it if async."""
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def run_sync(make: Callable[[], Coroutine[object, object, T] | Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to completion from synchronous code.

    It runs on the process's long-lived background loop (see :mod:`sigform.runtime`), with
    this thread's contextvars, so per-loop resources such as the LM's async clients persist
    across calls; that works from inside a running loop too (a notebook, an async framework
    calling sync code), which blocks until the call is done, as any sync call does. A call made
    from code the background loop is already running (a sync tool, hook or approver calling an
    agent) runs on a fresh loop in a helper thread instead: waiting on the busy loop, or on its
    worker threads, could deadlock.
    """
    if not runtime.in_loop():
        return runtime.run(_as_coroutine(make()))
    ctx = contextvars.copy_context()
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = ctx.run(asyncio.run, _as_coroutine(make()))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="sigform-tools-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable
