"""Work a fresh process will soon need, done in one background thread when the first LM is built.

``import sigform`` loads almost nothing, so a fresh process pays for the call path on its first
call: the openai SDK on the fast path (about 0.5 s), the adapter stack, its templates and its
patterns (about 50 ms). A notebook builds its LM in one cell and calls it in the next, so that
work can happen while the user types. Layers register named tasks here (the LM registers the
SDK import, the root package the call path); building an LM starts the ones it will need, each
once per process, in one thread.

A call that is about to do the same work first :func:`wait` s for the thread rather than
importing alongside it: two threads importing one package's modules in different orders can
fail (Python raises ``_DeadlockError``, or a half-initialised module lacks a name). The
exception is a wait from inside an import, where joining could hang (see :func:`wait`). A task
that fails is ignored; the call does the work again and reports the error where it belongs. A
fork waits for the thread too: a child forked mid-import would inherit module locks held by a
thread it does not have, and hang on its first import of those modules.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from sigform.probes import probe

__all__ = ["CALL_PATH", "register", "start", "wait"]

# a warm-up that loads no new module for this long is not waited for any longer (see wait())
STALLED = 2.0

CALL_PATH = "the call path"  # registered by the root package: it lives above this layer

_tasks: dict[str, Callable[[], None]] = {}
_started: set[str] = set()
_threads: list[threading.Thread] = []
_lock = threading.Lock()


def register(name: str, task: Callable[[], None]) -> None:
    """Make ``task`` startable as ``name`` (registering a name again replaces its task)."""
    _tasks[name] = task


def start(*names: str) -> None:
    """Run the registered tasks among ``names`` not started before, in one background thread."""
    with _lock:
        todo = [name for name in names if name in _tasks and name not in _started]
        _started.update(todo)
        if not todo:
            return
        # not a daemon: an interpreter that exits while a daemon thread is importing can abort
        # (SIGABRT at finalisation); exit waits for the imports instead
        thread = threading.Thread(target=_run, args=(todo,), name="sigform-warmup", daemon=False)
        _threads.append(thread)
    thread.start()


def wait() -> None:
    """Block until warm-up threads started so far have finished (free once they have).

    Not from inside an import: the thread importing a module holds that module's lock, and the
    warm-up may be waiting for it (``from sigform.predict.predict import Predict`` right after
    building an LM), so joining there would hang both threads. Such a caller imports beside the
    warm-up, under Python's own import locks. Nor for ever: a warm-up that stops loading modules
    for :data:`STALLED` seconds may be waiting for a lock the caller holds, and the caller goes on."""
    if not _threads or _inside_import():
        return
    for thread in list(_threads):  # every caller joins: none may import beside a running task
        if thread is not threading.current_thread():
            _join_while_loading(thread)
    with _lock:
        _threads[:] = [thread for thread in _threads if thread.is_alive()]


def _join_while_loading(thread: threading.Thread) -> None:
    """Join ``thread`` while it keeps loading modules. After :data:`STALLED` seconds with no new
    module it may be waiting for a lock this thread holds (a deadlock a plain join would make
    permanent), so the caller goes on and imports beside it, as it would without a warm-up."""
    loaded, since = len(sys.modules), time.monotonic()
    while thread.is_alive():
        thread.join(0.05)
        now = time.monotonic()
        if len(sys.modules) != loaded:
            loaded, since = len(sys.modules), now
        elif now - since > STALLED:
            return


def _inside_import() -> bool:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _run(names: list[str]) -> None:
    for name in names:
        probe(f"warming up {name}", _tasks[name], None)


if hasattr(os, "register_at_fork"):  # multiprocessing's fork start method, os.fork()
    os.register_at_fork(before=wait)
