"""Entry point of the server child process: ``python .../_launcher.py <server args>``.

It runs ``llama_cpp.server`` in this process with the given arguments, plus a watchdog thread:
when the process that started us is gone (``SIGFORM_LOCAL_PARENT_PID`` no longer our parent),
we exit. So the server never outlives its owner, even when the owner is killed with SIGKILL and
its ``atexit`` handler never runs. ``PR_SET_PDEATHSIG`` is not used because it fires when the
*thread* that spawned the child exits, and servers may be started from worker threads.

Run by file path and importing nothing from sigform, so that it works however sigform itself
was made importable in the parent (installed, editable, or a ``sys.path`` entry).
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time

PARENT_ENV = "SIGFORM_LOCAL_PARENT_PID"
_POLL_SECONDS = 0.5


def windows_pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs, on Windows (where ``os.kill(pid, 0)`` would terminate it)."""
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259
    finally:
        kernel32.CloseHandle(handle)


def _parent_gone(parent_pid: int) -> bool:
    if sys.platform == "win32":  # Windows never re-parents; ask whether the parent still runs
        return not windows_pid_alive(parent_pid)
    return os.getppid() != parent_pid


def _watch(parent_pid: int) -> None:
    while not _parent_gone(parent_pid):
        time.sleep(_POLL_SECONDS)
    os._exit(0)  # the server holds nothing worth a graceful shutdown


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # our private modules must not shadow anything the server imports
    parent = int(os.environ.get(PARENT_ENV) or 0)
    if parent:
        if _parent_gone(parent):
            sys.exit(0)
        threading.Thread(target=_watch, args=(parent,), name="sigform-parent-watch", daemon=True).start()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
