"""Is a recorded server really ours? Checks on a pid and port read from the (untrusted) state file.

``local-server.json`` lives in a cache folder; whoever can write it could point us at another
process's port (a forged pid of 1, or of any live process), and our prompts would go there. So a
recorded server is adopted only when, on Linux:

* the process belongs to the same user as us,
* its command line is sigform's launcher serving the recorded model file, and
* it holds the listening socket of the recorded port (one of its ``/proc/<pid>/fd`` entries is
  the ``socket:[inode]`` that ``/proc/net/tcp``/``tcp6`` lists as listening on that port).

Where these cannot be checked (no ``/proc``: macOS, Windows) nothing is adopted and each process
starts its own server: a second server costs memory, a wrong one leaks prompts.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_PROC = Path("/proc")
_LISTEN = "0A"  # TCP state code of a listening socket in /proc/net/tcp
LAUNCHER = "_launcher.py"


def _listening_inodes(port: int, proc: Path) -> set[str]:
    """Inodes of the sockets listening on TCP ``port`` (any local address, IPv4 or IPv6)."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10 or cols[3] != _LISTEN:
                continue
            local_port = cols[1].rpartition(":")[2]
            try:
                if int(local_port, 16) == port:
                    inodes.add(cols[9])
            except ValueError:
                continue
    return inodes


def _socket_inodes(pid: int, proc: Path) -> set[str]:
    """Inodes of the sockets process ``pid`` holds open (empty if its fds cannot be read)."""
    inodes: set[str] = set()
    try:
        entries = list((proc / str(pid) / "fd").iterdir())
    except OSError:
        return inodes
    for entry in entries:
        try:
            target = os.readlink(entry)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _is_our_launcher(argv: list[str], model_path: str) -> bool:
    """Whether ``argv`` is sigform's launcher serving ``model_path``."""
    if len(argv) < 2 or Path(argv[1]).name != LAUNCHER or Path(argv[1]).parent.name != "local":
        return False
    return any(a == "--model" and b == model_path for a, b in itertools.pairwise(argv))


def ownership_problem(pid: int, port: int, model_path: str, proc: Path = _PROC) -> str | None:
    """Why the process ``pid`` cannot be trusted as our server on ``port`` (None when it can)."""
    if not (proc / "net" / "tcp").exists():
        return "this platform offers no way to check which process listens on a port"
    base = proc / str(pid)
    try:
        uid = base.stat().st_uid
        argv = (base / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return f"process {pid} does not exist or cannot be inspected"
    if uid != os.geteuid():
        return f"process {pid} belongs to another user (uid {uid})"
    if not _is_our_launcher(argv, model_path):
        return f"process {pid} is not sigform's local server for {model_path}"
    listening = _listening_inodes(port, proc)
    if not listening:
        return f"nothing listens on port {port}"
    if not listening & _socket_inodes(pid, proc):
        return f"process {pid} does not hold the socket listening on port {port}"
    return None
