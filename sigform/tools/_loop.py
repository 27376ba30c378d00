"""One long-lived event loop per process for synchronous callers of async code.

``run_sync`` hands coroutines to a loop running forever in a daemon thread, so what lives per
loop - the LM's async HTTP clients and their connection pools - persists from one sync call to the
next instead of being rebuilt by a fresh ``asyncio.run`` each time. The caller's contextvars
(settings, callbacks) go with each coroutine; the caller blocks until it finishes, and an
interrupt while waiting (Ctrl-C) cancels it. At interpreter exit the loop shuts down its async
generators, which closes the clients bound to it. A forked child starts a loop of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["inside", "run_on_background_loop"]

T = TypeVar("T")

# set in every task the background loop runs (and so in the worker threads it starts): a nested
# sync call from there must not wait on that same loop, or on its busy thread pool
inside: contextvars.ContextVar[bool] = contextvars.ContextVar("sigform_background_run", default=False)


class _Background:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="sigform-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def usable(self) -> bool:
        return self.pid == os.getpid() and self.thread.is_alive() and not self.loop.is_closed()

    def shutdown(self) -> None:
        """Close async generators (and with them the loop's LM clients), then stop the loop."""
        if not self.usable():
            return
        done = asyncio.run_coroutine_threadsafe(self.loop.shutdown_asyncgens(), self.loop)
        with contextlib.suppress(Exception):
            done.result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


_background: _Background | None = None
_lock = threading.Lock()


def _loop() -> _Background:
    global _background
    current = _background
    if current is not None and current.usable():
        return current
    with _lock:
        if _background is None or not _background.usable():
            first = _background is None
            _background = _Background()
            if first:
                atexit.register(_shutdown)
        return _background


def _shutdown() -> None:
    if _background is not None:
        _background.shutdown()


def run_on_background_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the process's background loop with the caller's contextvars; block until
    it is done and return its result (or raise its exception)."""
    background = _loop()
    loop = background.loop
    ctx = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    started: list[asyncio.Task[None]] = []

    async def body() -> None:
        # every outcome is handed over here: a KeyboardInterrupt or SystemExit escaping a task
        # would otherwise stop the loop itself, leaving the caller waiting forever
        try:
            value = await coro
        except asyncio.CancelledError:
            result.cancel()
            raise
        except BaseException as exc:
            result.set_exception(exc)
        else:
            result.set_result(value)

    def settle(task: asyncio.Task[None]) -> None:  # cancelled before it started
        if not result.done():
            result.cancel()

    def start() -> None:  # on the loop thread, inside ctx: the task copies ctx as it is created
        inside.set(True)
        task = loop.create_task(body())
        started.append(task)
        task.add_done_callback(settle)

    loop.call_soon_threadsafe(ctx.run, start)
    try:
        return result.result()
    except BaseException:
        if not result.done():  # interrupted while waiting: stop the run rather than orphan it
            loop.call_soon_threadsafe(lambda: [t.cancel() for t in started])
        raise

