"""Entry point of the local model's child processes.

``python .../_launcher.py <server args>`` runs the server; ``python .../_launcher.py
--sigform-probe MODEL THREADS [--sigform-safe-cpu]`` is the CPU check (see ``_cpu_check``): it
loads the model as the server would, answers one short prompt and exits 0 (a machine whose CPU
path is unusable kills it with a signal instead).

The server mode runs ``llama_cpp.server`` in this process with the given arguments, plus a watchdog thread:
when the process that started us is gone (``SIGFORM_LOCAL_PARENT_PID`` no longer our parent),
we exit. So the server never outlives its owner, even when the owner is killed with SIGKILL and
its ``atexit`` handler never runs. ``PR_SET_PDEATHSIG`` is not used because it fires when the
*thread* that spawned the child exits, and servers may be started from worker threads.

With ``--sigform-safe-cpu`` (taken off the arguments before the server sees them) the model is
loaded with ``use_extra_bufts = False``: llama.cpp then keeps the weights in plain CPU buffers
instead of repacking them for a special instruction path (AMX, ...), which some machines
advertise but fault on (SIGSEGV on the first completion). ``llama_cpp.server`` has no option for
it, so the library's default model parameters are wrapped in this process.

Run by file path and importing nothing from sigform, so that it works however sigform itself
was made importable in the parent (installed, editable, or a ``sys.path`` entry).
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import sys
import threading
import time

PARENT_ENV = "SIGFORM_LOCAL_PARENT_PID"
SAFE_CPU_FLAG = "--sigform-safe-cpu"
PROBE_FLAG = "--sigform-probe"
# long enough to reach the matrix kernels a real request uses (prompt batch and generation)
_PROBE_PROMPT = "Extract the payee and the amount: Paid $42.50 to Anna Berg for lunch on 2024-05-14.\nPayee:"
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


def use_safe_cpu_settings() -> None:
    """Make every model this process loads skip the extra (repacking) buffer types."""
    import llama_cpp.llama_cpp as low_level  # the module whose defaults llama_cpp.Llama reads

    default = low_level.llama_model_default_params

    def safe_default_params() -> object:
        params = default()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = safe_default_params


def run_probe(model_path: str, threads: int) -> None:
    """Load the model and complete one short prompt (the CPU check's child)."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=model_path, n_ctx=512, n_batch=512, n_threads=threads, n_threads_batch=threads,
        logits_all=False, verbose=False,
    )
    llm.create_completion(_PROBE_PROMPT, max_tokens=4, temperature=0.0)
    print("sigform probe: ok", flush=True)


def main() -> None:
    faulthandler.enable()  # a crash in the library leaves a Python stack in the log
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # our private modules must not shadow anything the server imports
    parent = int(os.environ.get(PARENT_ENV) or 0)
    if parent:
        if _parent_gone(parent):
            sys.exit(0)
        threading.Thread(target=_watch, args=(parent,), name="sigform-parent-watch", daemon=True).start()
    args = sys.argv[1:]
    if SAFE_CPU_FLAG in args:
        args.remove(SAFE_CPU_FLAG)
        use_safe_cpu_settings()
    if args[:1] == [PROBE_FLAG]:
        run_probe(args[1], int(args[2]))
        return
    sys.argv = ["llama_cpp.server", *args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
