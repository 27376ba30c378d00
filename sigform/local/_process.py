"""One llama.cpp server child process: start it, wait until it answers, probe it, stop it.

The server is ``llama_cpp.server`` (OpenAI-compatible) run through ``_launcher`` so it dies with
its owner. Its output goes to a log file, never to the user's terminal; start-up failures quote
the end of that log. Each server runs in its own process group so that stopping it also stops
anything it spawned.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from sigform import jsonvalue
from sigform.errors import LocalModelError
from sigform.local._launcher import PARENT_ENV, SAFE_CPU_FLAG
from sigform.local._ownership import ownership_problem
from sigform.local._state import ServerState, pid_alive

log = logging.getLogger("sigform.local")

DEFAULT_ALIAS = "gemma-3-270m"
_BIND_ERRORS = ("address already in use", "error while attempting to bind", "errno 98", "errno 48")
_BIND_RETRIES = 3
_OVERRIDING_ENV = frozenset({"HOST", "PORT", "CONFIG_FILE"})


def default_threads() -> int:
    """Threads a server uses unless told otherwise: the cores, at most 4 (more do not help a
    270M model and starve the caller)."""
    return max(1, min(4, os.cpu_count() or 1))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe(host: str, port: int, alias: str, timeout: float = 2.0) -> bool:
    """True if an OpenAI-compatible server on ``host:port`` lists ``alias`` at ``/v1/models``."""
    # plain http.client: this runs on every start and adoption, and httpx costs ~0.25 s to set up
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/v1/models")
        resp = conn.getresponse()
        if resp.status != 200:
            return False
        data = jsonvalue.loads(resp.read()).get("data")
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        return False
    finally:
        conn.close()
    return isinstance(data, list) and any(isinstance(m, dict) and m.get("id") == alias for m in data)


def describe_exit(code: int | None) -> str:
    """A process exit status in words: ``signal SIGSEGV (11), exit code -11`` or ``exit code 3``."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        return f"signal {name} ({-code}), exit code {code}"
    return f"exit code {code}"


def read_log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of the log at ``path`` ('' if it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def crash_excerpt(path: Path, lines: int = 24) -> str:
    """The part of a log worth quoting after a crash: Python's fatal-error line and the stack of
    the thread that faulted (written by the launcher's faulthandler) if the log has them, else the
    last ``lines`` lines."""
    text = read_log_tail(path, lines=400)
    start = text.rfind("Fatal Python error")
    if start < 0:
        return "\n".join(text.splitlines()[-lines:])
    report = text[start:].splitlines()
    current = next((i for i, line in enumerate(report) if line.startswith("Current thread")), None)
    if current is None:
        return "\n".join(report[:lines])
    return "\n".join([report[0], *report[current:current + lines - 1]])


class LocalServer:
    """A running local model server: ``api_base`` to send OpenAI-style requests to, ``pid``,
    ``port``, ``log_path``. Use as a context manager, or call :meth:`stop`.

    ``owned`` is True for a server this process started. A server found through the shared
    state file (started by another process) has ``owned=False``: :meth:`stop` then only lets go
    of it, because its owner stops it when that process exits.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        pid: int,
        model_path: Path,
        alias: str,
        log_path: Path,
        started_at: float,
        process: subprocess.Popen[bytes] | None = None,
        owner_pid: int | None = None,
        safe_cpu: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.pid = pid
        self.model_path = model_path
        self.alias = alias
        self.log_path = log_path
        self.started_at = started_at
        self._process = process
        self.owner_pid = owner_pid if owner_pid is not None else os.getpid()
        self.safe_cpu = safe_cpu  # started with use_extra_bufts=False (see _cpu_check)
        self._stopped = False

    @classmethod
    def from_state(cls, state: ServerState) -> LocalServer:
        """A handle on a server described by the shared state file (owned by another process)."""
        return cls(
            host=state.host,
            port=state.port,
            pid=state.pid,
            model_path=Path(state.model_path),
            alias=state.alias,
            log_path=Path(state.log_path),
            started_at=state.started_at,
            owner_pid=state.owner_pid,
        )

    def to_state(self) -> ServerState:
        return ServerState(
            port=self.port,
            pid=self.pid,
            owner_pid=self.owner_pid,
            model_path=str(self.model_path),
            alias=self.alias,
            started_at=self.started_at,
            log_path=str(self.log_path),
            host=self.host,
        )

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def owned(self) -> bool:
        """True when this process started the server (and so stops it)."""
        return self._process is not None and self.owner_pid == os.getpid()

    def is_alive(self) -> bool:
        """True while the server process exists (cheap: no network)."""
        if self._stopped:
            return False
        if self.owned:
            assert self._process is not None
            return self._process.poll() is None
        return pid_alive(self.pid)

    @property
    def returncode(self) -> int | None:
        """The exit code once an owned server has exited (None while running or if not owned)."""
        return self._process.poll() if self.owned and self._process is not None else None

    def is_healthy(self, timeout: float = 2.0) -> bool:
        """True if the process is alive and answers ``/v1/models`` with our alias."""
        return self.is_alive() and probe(self.host, self.port, self.alias, timeout)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server log."""
        return read_log_tail(self.log_path, lines)

    def wait_exit(self, timeout: float) -> int | None:
        """For an owned server: wait up to ``timeout`` s for it to exit; its exit code, or None."""
        if not self.owned or self._process is None:
            return None
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server if this process owns it (SIGTERM, then SIGKILL after ``timeout``);
        for a server owned by another process, only forget it."""
        if self._stopped:
            return
        self._stopped = True
        if not self.owned:
            return
        assert self._process is not None
        terminate(self._process, timeout)
        log.info("stopped local model server pid %d on port %d", self.pid, self.port)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "owned" if self.owned else "shared"
        return f"LocalServer(api_base={self.api_base!r}, pid={self.pid}, alias={self.alias!r}, {state})"


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":
            proc.send_signal(sig)
        else:
            os.killpg(proc.pid, sig)  # start_new_session made the server its own group leader


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            pass
    # also reached when the leader already exited: make sure nothing of its group is left
    _signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)


def _command(
    *, model_path: Path, host: str, port: int, alias: str, n_ctx: int, n_threads: int, n_batch: int,
    chat_format: str, safe_cpu: bool, extra_args: tuple[str, ...],
) -> list[str]:
    return [
        "--model", str(model_path),
        "--model_alias", alias,
        "--host", host,
        "--port", str(port),
        "--chat_format", chat_format,
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads),
        "--n_threads_batch", str(n_threads),  # its default is every core, not n_threads
        "--n_batch", str(n_batch),
        # the server defaults to logits for every prompt token (only needed for logprobs): 3x the
        # memory (1.5 GB vs 0.5 GB resident) and ~2.5x slower prompt processing in our measurements
        "--logits_all", "False",
        *([SAFE_CPU_FLAG] if safe_cpu else []),
        *extra_args,
    ]


def spawn(args: list[str], log_path: Path, *, append: bool = False) -> subprocess.Popen[bytes]:
    """Run the launcher (``_launcher.py``) with ``args`` in a process group of its own, its output
    to ``log_path`` (after a line with the time and the command): the server, or the CPU check."""
    cmd = [sys.executable, str(Path(__file__).with_name("_launcher.py")), *args]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # llama_cpp.server lets $HOST, $PORT and $CONFIG_FILE override its arguments: drop them
    env = {k: v for k, v in os.environ.items() if k not in _OVERRIDING_ENV}
    env.update({PARENT_ENV: str(os.getpid()), "PYTHONUNBUFFERED": "1"})
    # llama.cpp's OpenMP threads spin while waiting; on a busy machine (the user's own work, a
    # test run) that made generation ~10x slower in our measurements. Passive waiting avoids it.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    with log_path.open("ab" if append else "wb") as log_file:  # the child keeps its own descriptor
        log_file.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
        log_file.flush()
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env=env,
            close_fds=True, **kwargs,
        )


def _wait_healthy(server: LocalServer, proc: subprocess.Popen[bytes], timeout: float) -> str | None:
    """Wait until ``server`` answers. Returns None when healthy, else why it is not."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        code = proc.poll()
        if code is not None:
            return f"the server process ended during start-up ({describe_exit(code)})"
        if probe(server.host, server.port, server.alias, timeout=2.0):
            return None
        if time.monotonic() >= deadline:
            return f"the server did not answer within {timeout:g} s"
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def start_server(
    *,
    model_path: Path,
    log_path: Path | None,
    log_dir: Path,
    host: str = "127.0.0.1",
    port: int | None = None,
    alias: str = DEFAULT_ALIAS,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    n_batch: int = 512,
    chat_format: str = "gemma",
    startup_timeout: float = 120.0,
    safe_cpu: bool = False,
    extra_args: tuple[str, ...] = (),
) -> LocalServer:
    """Start a server child process and return it once ``/v1/models`` answers with ``alias``.

    ``safe_cpu`` loads the model with ``use_extra_bufts=False`` (see ``_cpu_check``).
    With ``port=None`` a free port is chosen (and another one tried if it was taken in between).
    Raises :class:`LocalModelError` quoting the end of the server log if it fails to start.
    """
    threads = n_threads or default_threads()
    attempts = 1 if port is not None else _BIND_RETRIES
    for attempt in range(1, attempts + 1):
        chosen = port if port is not None else free_port(host)
        path = log_path or log_dir / f"local-server-{chosen}.log"
        args = _command(
            model_path=model_path, host=host, port=chosen, alias=alias, n_ctx=n_ctx, n_threads=threads,
            n_batch=n_batch, chat_format=chat_format, safe_cpu=safe_cpu, extra_args=extra_args,
        )
        started = time.time()
        proc = spawn(args, path)
        server = LocalServer(
            host=host, port=chosen, pid=proc.pid, model_path=model_path, alias=alias, log_path=path,
            started_at=started, process=proc, safe_cpu=safe_cpu,
        )
        try:
            # the port is on the child's command line: another process may have bound it first
            # and answered with our alias; only the child holding the listening socket counts
            problem = _wait_healthy(server, proc, startup_timeout)
            impostor = None if problem else _impostor(proc.pid, chosen, model_path)
        except BaseException:  # e.g. KeyboardInterrupt while waiting: leave no orphan behind
            terminate(proc, 5.0)
            raise
        if problem is None and impostor is None:
            log.info("local model server pid %d ready at %s (%.1f s)", proc.pid, server.api_base,
                     time.time() - started)
            return server
        terminate(proc, 5.0)
        tail = read_log_tail(path)
        problem = problem or impostor  # an impostor is not retried: it would take the next port too
        if impostor is None and attempt < attempts and any(marker in tail.lower() for marker in _BIND_ERRORS):
            log.info("port %d was taken before the server could bind it; trying another", chosen)
            continue
        raise LocalModelError(
            f"the local model server failed to start: {problem}.\n"
            f"  command: {' '.join(cast(list[str], proc.args))}\n  log: {path}\n"
            f"  last log lines:\n{_indent(tail)}",
            model="local",
        )
    raise AssertionError("unreachable")  # pragma: no cover


def _impostor(pid: int, port: int, model_path: Path) -> str | None:
    """Why the process answering on ``port`` is not the child ``pid`` (None when it is, or
    where that cannot be checked): the child must hold the listening socket, as for adoption."""
    problem = ownership_problem(pid, port, str(model_path))
    if problem is None or problem.startswith("this platform"):
        return None
    return (
        f"another process answered on port {port} in the server's place ({problem}); it was "
        "refused and sent nothing"
    )


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty log)"
