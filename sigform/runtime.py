"""What is process-wide in sigform: one background event loop, one thread pool, fork and exit.

* :func:`run` runs a coroutine on the process's one background event loop (a daemon thread,
  started on first use) in a copy of the caller's context, and waits for it. Sync LM requests
  sent side by side, sync calls of async tools and ``sigform.ray`` workers all use this loop, so
  what lives per loop (async HTTP sessions) lives as long as the process. :func:`threads` is the
  process's pool for blocking work.
* Fork: a forked child (``os.fork``, ``multiprocessing``'s fork start method) has only the thread
  that forked. The loop, the pool and every background thread are gone there, and a lock another
  thread held stays held for ever. So in the child the runtime forgets its loop and pool and calls
  every reset registered with :func:`on_fork` (module state) or :func:`forget_after_fork`
  (objects with an ``_after_fork()`` method: locks, queues, connection pools, server handles).
  The parent's resources are never closed from the child (closing a shared socket or TLS session
  would break the parent's).
* Exit: :func:`on_exit` callbacks run once, last registered first, at interpreter exit, then the
  loop closes its async generators (and with them its sessions) and stops. A ``multiprocessing``
  child ends without running ``atexit``; there the same callbacks run from multiprocessing's own
  exit hook, so its pending work (disk-cache writes) is not lost.

Nothing here runs in the background except the loop (and the pool's workers, on demand): nothing
imports in a background thread, so a fork never inherits a half-held import lock from sigform.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_SHUTDOWN_S = 5.0  # how long exit waits for the loop's sessions to close
_log = logging.getLogger("sigform")

# True in every task run() starts (and so in the worker threads those tasks start): a sync call
# made from there must not wait for the busy loop
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("sigform_runtime_loop", default=False)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_fork_resets: list[Callable[[], None]] = []
_forgetful: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_callbacks: list[Callable[[], None]] = []
_exit_hooked_pid: int | None = None  # the process whose exit runs the callbacks
_exited_pid: int | None = None


# -- the loop and the pool ---------------------------------------------------------------------


def loop() -> asyncio.AbstractEventLoop:
    """The background loop (started if it is not running yet)."""
    global _loop, _thread
    current = _loop
    if current is not None:
        return current
    with _lock:
        if _loop is None:
            new = asyncio.new_event_loop()
            thread = threading.Thread(target=_serve, args=(new,), name="sigform-loop", daemon=True)
            thread.start()
            _loop, _thread = new, thread
            _hook_exit()
        return _loop


def _serve(new: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(new)
    try:
        new.run_forever()
    finally:
        new.close()


def in_loop() -> bool:
    """Whether the caller runs on the background loop or in work it started (such a caller
    must never wait for the loop)."""
    return _inside.get() or (_thread is not None and threading.current_thread() is _thread)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop in a copy of the caller's context (settings, scoped
    callbacks); the calling thread waits for its result or error. An interrupted wait (Ctrl-C)
    cancels the coroutine rather than leaving it running."""
    target = loop()
    ctx = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    started: list[asyncio.Task[None]] = []

    async def body() -> None:
        # every outcome is handed over here: a KeyboardInterrupt or SystemExit escaping a task
        # would stop the loop itself and leave the caller waiting for ever
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

    def start() -> None:  # on the loop's thread, inside ctx: the task copies ctx as it is made
        _inside.set(True)
        task = target.create_task(body())
        started.append(task)
        task.add_done_callback(settle)

    target.call_soon_threadsafe(ctx.run, start)
    try:
        return result.result()
    except BaseException:
        if not result.done():
            target.call_soon_threadsafe(lambda: [task.cancel() for task in started])
        raise


def threads() -> concurrent.futures.ThreadPoolExecutor:
    """The process's thread pool for blocking work (made on first use)."""
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="sigform")
            pool = _pool
    return pool


# -- fork ----------------------------------------------------------------------------------------


def on_fork(reset: Callable[[], None]) -> None:
    """Call ``reset`` in every child forked from now on (module state: fresh locks, no handles)."""
    if reset not in _fork_resets:
        _fork_resets.append(reset)


def forget_after_fork(obj: object) -> None:
    """Call ``obj._after_fork()`` in every child forked while ``obj`` lives."""
    _forgetful.add(obj)


def _after_fork_in_child() -> None:
    global _lock, _loop, _thread, _pool
    _lock = threading.Lock()
    _loop = _thread = _pool = None  # the parent's; their threads do not exist here
    for reset in [*_fork_resets, *(obj._after_fork for obj in list(_forgetful))]:
        try:
            reset()
        except Exception:  # one failed reset must not leave the others undone
            _log.warning("sigform: a reset after fork failed", exc_info=True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- exit ----------------------------------------------------------------------------------------


def on_exit(callback: Callable[[], None]) -> None:
    """Call ``callback`` once when this process ends (last registered, first called)."""
    if callback not in _exit_callbacks:
        _exit_callbacks.append(callback)
    _hook_exit()


def _hook_exit() -> None:
    """Make sure this process's exit runs the callbacks: ``atexit`` (registered at import) or, in a
    ``multiprocessing`` child (which skips ``atexit``), multiprocessing's own exit hook."""
    global _exit_hooked_pid
    pid = os.getpid()
    if _exit_hooked_pid == pid:
        return
    _exit_hooked_pid = pid
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.parent_process() is not None:
        from multiprocessing import util

        util.Finalize(None, _at_exit, exitpriority=100)


def _at_exit() -> None:
    global _exited_pid
    if _exited_pid == os.getpid():
        return
    _exited_pid = os.getpid()
    for callback in reversed(_exit_callbacks):
        try:
            callback()
        except Exception:
            _log.warning("sigform: an exit callback failed", exc_info=True)
    _stop_loop()
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)


def _stop_loop() -> None:
    global _loop, _thread
    with _lock:
        current, thread = _loop, _thread
        _loop = _thread = None
    if current is None or thread is None or current.is_closed() or not thread.is_alive():
        return
    with contextlib.suppress(Exception):  # exit goes on whatever a session does on closing
        asyncio.run_coroutine_threadsafe(current.shutdown_asyncgens(), current).result(_SHUTDOWN_S)
    with contextlib.suppress(RuntimeError):  # closed meanwhile
        current.call_soon_threadsafe(current.stop)
    thread.join(timeout=_SHUTDOWN_S)


atexit.register(_at_exit)
