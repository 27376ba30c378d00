"""One background event loop per process, for sync fast-path requests sent side by side.

A sync request goes through the SDK's sync client: httpx's synchronous stack, about 500 µs of
CPU per request when 64 threads share it (a threaded ``batch`` against a local server), where
the async route over the SDK's aiohttp session costs about 130 µs. So a sync request that
starts while another sync request of the process is in flight is sent by this loop's thread, the
async way, while its own thread waits for the answer (see ``OpenAIBackend.complete``); a lone
sync call (a script, a notebook cell) still goes the sync way, with no thread hop in its latency.

The loop runs in a daemon thread started on first use. At interpreter exit it shuts down its
async generators, which closes its SDK clients (no aiohttp session is left unclosed), and stops.
A forked child starts its own loop if it needs one (the parent's thread does not exist there).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["in_io_thread", "io_loop", "run_in_io_loop"]

T = TypeVar("T")
_SHUTDOWN_S = 5.0  # how long exit waits for the loop's clients to close

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def run_in_io_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop, in a copy of the caller's context (settings, scoped
    callbacks); the calling thread waits for its result (or error). Should the wait be
    interrupted (a KeyboardInterrupt), the coroutine is cancelled rather than left running."""
    future = asyncio.run_coroutine_threadsafe(coro, _io_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def io_loop() -> asyncio.AbstractEventLoop:
    """The background loop (started if it is not running yet)."""
    return _io_loop()


def in_io_thread() -> bool:
    """Whether the caller is the loop's own thread (which must never wait for the loop)."""
    return _thread is not None and threading.current_thread() is _thread


def _io_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    loop = _loop
    if loop is not None:
        return loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_serve, args=(loop,), name="sigform-io", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
            atexit.register(_shutdown, loop, thread)
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    global _loop, _thread
    with _lock:
        if _loop is loop:
            _loop = _thread = None
    if loop.is_closed() or not thread.is_alive():
        return
    with contextlib.suppress(Exception):  # exit goes on whatever a client does on closing
        asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop).result(timeout=_SHUTDOWN_S)
    with contextlib.suppress(RuntimeError):  # closed meanwhile
        loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=_SHUTDOWN_S)


def _forget_in_child() -> None:
    global _loop, _thread, _lock
    _loop = _thread = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
