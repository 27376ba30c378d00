"""Run one command so that it leaves no process behind (Linux): the command tool's supervisor.

:func:`sigform.tools.command.run_command` starts ``python -I -S _reaper.py STATUS_FD OWNER ARGV...``
(standard library only: it never imports sigform, so it starts in a few milliseconds). This process
marks itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``) and starts the command, so every
process the command starts stays its descendant: an orphan is re-parented to the nearest subreaper
instead of init, even one that called ``setsid()`` (which only leaves the process group and session)
and whose parent has exited (a double-forked daemon). When the command exits, or when this process
receives SIGTERM (the command timed out or its call was cancelled), every descendant still running
is killed, found by walking ``/proc``; then this process exits as the command did.

It also ends everything when its owner (the process OWNER that started it) dies, however it dies,
SIGKILL included: it asks the kernel for SIGTERM on its parent's death (``PR_SET_PDEATHSIG``), so
a command or an MCP server that outlives a killed owner (one that ignores the end of its stdin)
is not left running. The kernel sends it when the *thread* that started this process ends: sigform
starts it from an event loop's thread, and a command whose loop is gone has nobody to read it.

What can still escape: processes that are not descendants (handed to a service manager, ``at``, a
container daemon, a remote host), and processes this user may not signal (setuid programs).

STATUS_FD receives ``started`` once the command runs, or ``error ERRNO`` when it could not be started
(then the exit code is 127), and is closed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from types import FrameType

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 200  # kill rounds; each waits a little for the killed to die and their orphans to arrive
_ROUND_PAUSE = 0.005


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Ask the kernel to re-parent this process's orphaned descendants to it (False if it cannot)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def end_with_owner(owner: int) -> None:
    """SIGTERM this process when its parent dies; if ``owner`` has already died (before the
    request was made), act on it now."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != owner:
        _on_sigterm(signal.SIGTERM, None)


def descendants(root: int) -> list[int]:
    """The running (not zombie) descendants of ``root``, read from ``/proc`` (empty without it)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:  # exited meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> None:
    """Collect every exited child (killed descendants are re-parented here as their parents die)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants() -> None:
    """SIGKILL every descendant, round after round, until none is left (or only unkillable ones)."""
    me = os.getpid()
    refused: set[int] = set()
    for _ in range(_ROUNDS):
        alive = [pid for pid in descendants(me) if pid not in refused]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:  # another user's process (a setuid program): cannot be ended
                refused.add(pid)
        _reap()
        time.sleep(_ROUND_PAUSE)
    _reap()


def _reap_orphans(child: int) -> None:
    """Collect descendants that were re-parented here and exited, leaving the command's own exit
    status for the main wait (a long run with many short-lived daemons would pile up zombies)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # look, do not collect
        except ChildProcessError:
            return
        if info is None or info.si_pid == child:
            return
        try:
            os.waitpid(info.si_pid, os.WNOHANG)
        except ChildProcessError:
            return


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    end_descendants()
    os._exit(128 + signum)


def _exit_like(code: int) -> None:
    """Exit with the command's status: its exit code, or death by the same signal (no core file)."""
    if code >= 0:
        os._exit(code)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that did not end this process


def main(args: list[str]) -> None:
    status = os.fdopen(int(args[0]), "w")
    owner, command = int(args[1]), args[2:]
    signal.signal(signal.SIGTERM, _on_sigterm)  # set first: a timeout may come at any moment
    end_with_owner(owner)
    become_subreaper()
    os.set_inheritable(status.fileno(), False)  # the command must not hold the status pipe open
    try:  # stdin, stdout, stderr, cwd and environment are inherited (posix_spawnp: no subprocess import)
        child = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        status.write(f"error {exc.errno or 0}\n")
        status.close()
        os._exit(127)
    status.write("started\n")
    status.close()
    signal.signal(signal.SIGCHLD, lambda signum, frame: _reap_orphans(child))
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    end_descendants()
    _exit_like(code)


if __name__ == "__main__":
    main(sys.argv[1:])
