"""Running one command: spawn it without a shell, capture bounded output, and end it and every
process it started when it exits, times out or is cancelled.

On Linux each command runs under a small supervisor (:mod:`sigform.tools._reaper`, a child
subreaper), so the processes it started that are still running when it exits, times out or is
cancelled are killed, including ones that called ``setsid()`` or double-forked; so is everything
when the process that started it dies, even by SIGKILL. Elsewhere (or without
``/proc``) only the command's process group is killed on timeout, and a process that left the group
survives. Processes that are not descendants (handed to a service manager, a container daemon,
``at``) or that belong to another user always survive.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sigform.tools.display import shell_line

__all__ = ["CommandOutput", "end_process", "end_process_now", "run_command", "spawn"]

_KEEP_TAIL = 4096  # of a truncated stream, keep the end too: errors are usually printed last


@dataclass(frozen=True)
class CommandOutput:
    """What one command did: its argv, exit code (None if it timed out) and captured output."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def render(self) -> str:
        """A compact transcript: the command line, its status and any output."""
        status = "timed out" if self.timed_out else f"exit code {self.returncode}"
        parts = [f"$ {shell_line(self.argv)}  ({status})"]
        if self.stdout.strip():
            parts.append(f"stdout:\n{self.stdout.rstrip()}")
        if self.stderr.strip():
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        return "\n".join(parts)


async def _read_bounded(stream: asyncio.StreamReader | None, limit: int) -> tuple[str, int]:
    """Read a stream to its end keeping at most ``limit`` bytes (head and tail); drop the rest."""
    if stream is None:
        return "", 0
    head = bytearray()
    tail = bytearray()
    dropped = 0
    tail_size = min(_KEEP_TAIL, limit // 2)
    head_size = limit - tail_size
    while chunk := await stream.read(65536):
        room = head_size - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            tail += chunk
            if len(tail) > tail_size:
                dropped += len(tail) - tail_size
                del tail[: len(tail) - tail_size]
    text = head.decode("utf-8", "replace")
    if dropped:
        text += f"\n... [{dropped} bytes omitted] ...\n"
    return text + tail.decode("utf-8", "replace"), dropped


_REAPER = Path(__file__).with_name("_reaper.py")
# the supervisor needs prctl(PR_SET_CHILD_SUBREAPER) and /proc (Linux) and a Python to run it with
_SUPERVISED = sys.platform.startswith("linux") and os.path.isdir("/proc") and bool(sys.executable)
_REAPER_GRACE = 5.0  # seconds the supervisor gets to end the command's processes


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: children of a test runner too
        else:  # pragma: no cover - Windows
            proc.kill()
    except ProcessLookupError:
        pass


def _stop_supervisor(proc: asyncio.subprocess.Process) -> None:
    """Ask the supervisor to end every process of the command (it exits when they are gone)."""
    try:
        os.kill(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def end_process_now(proc: asyncio.subprocess.Process) -> None:
    """Signal the end of the command and everything it started, without waiting (for finalizers)."""
    if proc.returncode is None:
        if _SUPERVISED:
            _stop_supervisor(proc)
        else:
            _kill_group(proc)


async def end_process(proc: asyncio.subprocess.Process, supervised: bool = _SUPERVISED) -> None:
    """End the command and everything it started; the process group goes in any case."""
    if supervised and proc.returncode is None:
        _stop_supervisor(proc)
        try:
            await asyncio.wait_for(proc.wait(), _REAPER_GRACE)
        except asyncio.TimeoutError:
            pass
    _kill_group(proc)


async def _read_status(fd: int) -> str:
    """The supervisor's one status line ('started' or 'error ERRNO'); '' if it died first."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    try:
        return (await reader.read()).decode("ascii", "replace").strip()
    finally:
        transport.close()


async def spawn(
    argv: Sequence[str],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    *,
    stdin: int = subprocess.DEVNULL,
) -> asyncio.subprocess.Process:
    """Start ``argv`` in its own session (under the supervisor on Linux); OSError if it cannot run.
    stdout and stderr are pipes; ``stdin`` is /dev/null unless ``subprocess.PIPE`` is asked for."""
    common: dict[str, Any] = {
        "stdin": stdin,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "cwd": cwd,
        "env": dict(env) if env is not None else None,
        "start_new_session": hasattr(os, "killpg"),  # its own process group, so a timeout ends it
    }
    if not _SUPERVISED:
        return await asyncio.create_subprocess_exec(*argv, **common)
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(_REAPER), str(write_fd), str(os.getpid()), *argv,
            pass_fds=(write_fd,), **common,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        status = await _read_status(read_fd)
    except BaseException:
        await end_process(proc, supervised=True)
        raise
    if status == "started":
        return proc
    await proc.wait()
    code = int(status.split()[1]) if status.startswith("error ") and status.split()[1].isdigit() else 0
    if code:
        raise OSError(code, os.strerror(code), argv[0])  # FileNotFoundError, PermissionError, ...
    raise OSError(f"the command supervisor exited with code {proc.returncode} before starting {argv[0]!r}")


async def run_command(
    argv: Sequence[str],
    *,
    timeout: float,
    max_output: int,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandOutput:
    """Run one argv without a shell; capture bounded output; on timeout end it and every process
    it started (see the module docstring for what can escape)."""
    proc = await spawn(argv, cwd, env)

    async def communicate() -> tuple[str, str, int]:
        (out, _), (err, _), code = await asyncio.gather(
            _read_bounded(proc.stdout, max_output), _read_bounded(proc.stderr, max_output), proc.wait()
        )
        return out, err, code

    task = asyncio.ensure_future(communicate())
    try:
        out, err, code = await asyncio.wait_for(asyncio.shield(task), timeout)
        return CommandOutput(tuple(argv), code, out, err)
    except asyncio.TimeoutError:
        await end_process(proc, _SUPERVISED)
        try:  # the pipes close once every process is dead; bounded in case one escaped
            out, err, _ = await asyncio.wait_for(task, 5.0)
        except asyncio.TimeoutError:
            out, err = "", ""
        return CommandOutput(tuple(argv), None, out, err, timed_out=True)
    except asyncio.CancelledError:
        if _SUPERVISED:  # it ends the processes and exits by itself; killing its group first would stop it
            _stop_supervisor(proc)
        else:
            _kill_group(proc)
        task.cancel()
        raise
