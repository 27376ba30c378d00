"""The process-wide shared server behind ``LM("local")``: start once, reuse, stop at exit.

The policy is the package's (see :mod:`sigform.local`). A thread lock serialises start-up within
a process, a file lock on ``<cache>/local-server.json.lock`` across processes; the state file
records the server.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import replace
from pathlib import Path

from sigform import runtime
from sigform.errors import LocalModelError
from sigform.local._cpu_check import CRASH_SIGNALS, record_safe, use_safe_cpu
from sigform.local._model import default_model_path, ensure_model
from sigform.local._ownership import ownership_problem
from sigform.local._process import (
    DEFAULT_ALIAS,
    LocalServer,
    _indent,
    crash_excerpt,
    default_threads,
    describe_exit,
    port_open,
    probe,
    start_server,
)
from sigform.local._requirements import require_local_extra
from sigform.local._state import (
    ServerState,
    cache_dir,
    clear_state,
    pid_alive,
    read_state,
    state_path,
    write_state,
)

log = logging.getLogger("sigform.local")

MAX_RESTARTS = 1
SHARED_LOG = "local-server.log"

_lock = threading.RLock()
_current: LocalServer | None = None
_owned: list[LocalServer] = []  # every server this process started: stopped at exit
_restarts = 0
_force_safe = False  # our server died: its replacement uses the safe CPU settings


def _lock_file() -> str:
    return str(state_path()) + ".lock"


def _track(server: LocalServer) -> None:
    with _lock:
        _owned.append(server)
    runtime.on_exit(_stop_owned)


def _stop_owned() -> None:
    """At exit: stop every server this process started and drop its state-file record."""
    with _lock:
        servers = list(_owned)
        _owned.clear()
    for server in servers:
        if server.owned:
            server.stop(timeout=5.0)
            _clear_record(server.pid, lock_timeout=2.0)


def _clear_record(pid: int, lock_timeout: float) -> None:
    from filelock import FileLock, Timeout

    try:
        with FileLock(_lock_file()).acquire(timeout=lock_timeout):
            clear_state(pid)
    except Timeout:  # another process is busy starting a server; it checks the pid anyway
        clear_state(pid)


def _forget_after_fork() -> None:
    # A forked child does not own its parent's servers; it may adopt them via the state file.
    global _lock, _current, _restarts, _force_safe
    _lock = threading.RLock()
    _current = None
    _owned.clear()
    _restarts = 0
    _force_safe = False


runtime.on_fork(_forget_after_fork)


def model_type(api_base: str | None = None) -> str | None:
    """``"text"`` or ``"chat"`` for the model of the local server at ``api_base`` (default: the
    shared one; see :func:`sigform.local.model_type_of`); None when no server of this process's
    knowledge answers there, or when the file cannot be read (then: not known)."""
    from sigform.local._model import model_type_of
    from sigform.probes import probe

    servers = [s for s in (_current, *_owned) if s is not None]
    for server in servers:
        if api_base is None or server.api_base.rstrip("/") == api_base.rstrip("/"):
            path = Path(server.model_path)
            return probe("the local model's chat template", functools.partial(model_type_of, path), None)
    return None


def current_server() -> LocalServer | None:
    """The shared server this process uses (started or adopted), if any."""
    return _current


def ensure_server(*, startup_timeout: float = 120.0) -> str:
    """Return the OpenAI-compatible ``api_base`` of the shared local model server, starting it
    (or adopting one another process started) when needed. Cheap once running: call it before
    every request rather than caching the result, so that a dead server is noticed and replaced.

    Thread-safe and process-safe. Raises :class:`LocalModelError` when the ``local`` extra is
    missing, the model file fails its checksum, or the server cannot start.
    """
    global _current
    server = _current
    if server is not None and server.is_alive():
        return server.api_base
    with _lock:
        server = _current
        if server is not None and server.is_alive():
            return server.api_base
        if server is not None:
            _note_death(server)
            _current = None
        _current = _acquire(startup_timeout)
        return _current.api_base


def _death_message(server: LocalServer, what_next: str) -> str:
    settings = "safe CPU settings" if server.safe_cpu else "default settings"
    lines = _indent(crash_excerpt(server.log_path))
    return (
        f"the local model server (pid {server.pid}, port {server.port}, {settings}) died: "
        f"{describe_exit(server.returncode)}. {what_next}\n  log: {server.log_path}\n"
        f"  last log lines:\n{lines}"
    )


def _note_death(server: LocalServer) -> None:
    global _restarts, _force_safe
    if not server.owned:
        log.info("the shared local model server (pid %d, port %d) is gone; starting one for this process",
                 server.pid, server.port)
        return
    code = server.returncode
    how = describe_exit(code)
    if not server.safe_cpu and code is not None and -code in CRASH_SIGNALS:
        record_safe(cache_dir(), f"a local model server with the default CPU path died ({how})")
    _restarts += 1
    if _restarts > MAX_RESTARTS:
        raise LocalModelError(_death_message(server, (
            f"It had already been restarted {MAX_RESTARTS} time(s) with the safe CPU settings; giving up "
            "(a new process, or sigform.local.stop_server(), tries again)."
        )), model="local")
    _force_safe = True
    kept = _keep_log(server.log_path)
    log.warning("the local model server (pid %d, port %d) died (%s); restarting it with the safe CPU "
                "settings. Its log: %s", server.pid, server.port, how, kept)


def _keep_log(path: Path) -> Path:
    """Move a dead server's log aside (``<name>.previous.log``) so its replacement, which writes the
    same file, does not erase the crash report; returns where it is now."""
    kept = path.with_name(f"{path.stem}.previous{path.suffix}")
    try:
        os.replace(path, kept)
    except OSError:
        return path
    return kept


def death_report() -> LocalModelError | None:
    """Why requests to the shared server fail, when the reason is that our server died (for the
    error a caller sees once its retries are spent; nothing is restarted here)."""
    server = _current
    if server is None or not server.owned:
        return None
    # alive and listening a moment after the failure: it answered with an error of its own
    if server.wait_exit(timeout=0.2) is None and port_open(server.host, server.port):
        return None
    # a crashing server has closed its socket but may still be writing its fatal-error report
    if server.wait_exit(timeout=3.0) is None:
        return None
    if _restarts >= MAX_RESTARTS:
        what_next = "It had already been restarted with the safe CPU settings; the next call gives up."
    else:
        what_next = "The next call restarts it with the safe CPU settings."
    return LocalModelError(_death_message(server, what_next), model="local")


def _acquire(startup_timeout: float) -> LocalServer:
    require_local_extra()
    from filelock import FileLock, Timeout

    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    lock = FileLock(_lock_file())
    try:
        # another process may be starting the server right now: wait for it, then reuse it
        lock.acquire(timeout=startup_timeout + 60.0)
    except Timeout as exc:
        raise LocalModelError(
            f"timed out waiting for another process to start the local model server (lock {lock.lock_file})",
            model="local",
        ) from exc
    try:
        reused = _reusable(read_state())
        if reused is not None:
            log.info("reusing local model server pid %d at %s", reused.pid, reused.api_base)
            return reused
        clear_state()
        model = ensure_model()
        server = start_server(
            model_path=model, log_path=directory / SHARED_LOG, log_dir=directory,
            alias=DEFAULT_ALIAS, startup_timeout=startup_timeout,
            safe_cpu=_force_safe or use_safe_cpu(model, default_threads(), directory).safe,
        )
        _track(server)
        write_state(server.to_state())
        return server
    finally:
        lock.release()


def _reusable(state: ServerState | None) -> LocalServer | None:
    """A handle on the recorded server if it is ours to reuse: same model, pid alive, the pid is our
    launcher and holds the port's listening socket (see ``_ownership``), port answering."""
    if state is None or state.alias != DEFAULT_ALIAS or state.model_path != str(default_model_path()):
        return None
    if not pid_alive(state.pid):
        return None
    problem = ownership_problem(state.pid, state.port, state.model_path)
    if problem is not None:  # the state file is untrusted: never send prompts to someone else's port
        log.warning("not using the local server recorded in %s: %s", state_path(), problem)
        return None
    if not probe(state.host, state.port, state.alias):
        return None
    # the shared server always logs to SHARED_LOG: a log path read from the file is never opened
    return LocalServer.from_state(replace(state, log_path=str(state_path().parent / SHARED_LOG)))


def stop_server() -> None:
    """Stop the shared server if this process started it (other processes using it will start
    their own on their next call); if another process owns it, only stop using it. Also renews
    the restart budget after :func:`ensure_server` gave up on a crashing server."""
    global _current, _restarts, _force_safe
    with _lock:
        server, _current = _current, None
        _restarts = 0  # an explicit stop is a fresh start: the restart budget is renewed
        _force_safe = False
        if server is None:
            return
        if server.owned:
            server.stop()
            if server in _owned:
                _owned.remove(server)
            _clear_record(server.pid, lock_timeout=10.0)
        else:
            server.stop()  # forgets it; its owner keeps it running


def serve(
    *,
    port: int | None = None,
    model_path: str | Path | None = None,
    alias: str = DEFAULT_ALIAS,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    n_batch: int = 512,
    chat_format: str = "gemma",
    log_path: str | Path | None = None,
    startup_timeout: float = 120.0,
    safe_cpu: bool | None = None,
    extra_args: tuple[str, ...] = (),
) -> LocalServer:
    """Start a dedicated local model server and return it once it answers.

    Unlike :func:`ensure_server` it is not shared with other processes (nothing is written to
    the state file). Stop it with ``.stop()`` or use it as a context manager; it is also stopped
    when this process exits. ``model_path`` defaults to the packaged Gemma 3 270M (assembled and
    verified on first use); ``log_path`` defaults to ``<cache>/local-server-<port>.log``.
    ``safe_cpu`` picks the CPU settings (True: ``use_extra_bufts=False``); by default the machine's
    CPU check decides (see ``sigform.local``). ``extra_args`` are passed on to ``llama_cpp.server``.
    """
    require_local_extra()
    path = Path(model_path) if model_path is not None else ensure_model()
    if not path.is_file():
        raise LocalModelError(f"model file not found: {path}", model="local")
    if safe_cpu is None:
        safe_cpu = use_safe_cpu(path, n_threads or default_threads(), cache_dir()).safe
    server = start_server(
        model_path=path, log_path=Path(log_path) if log_path is not None else None, log_dir=cache_dir(),
        port=port, alias=alias, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch, chat_format=chat_format,
        startup_timeout=startup_timeout, safe_cpu=safe_cpu, extra_args=tuple(extra_args),
    )
    _track(server)
    return server
