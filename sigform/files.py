"""Opening data files that someone else may have made: the cache's secret, the local server's
state file, a checkpoint.

A path is only a name: another process (or user) can put a FIFO, a device or a folder there.
:func:`open_regular` opens without blocking and checks, on the opened descriptor, that it is a
regular file (a FIFO opened for reading would otherwise wait forever for a writer).
:func:`lock_exclusive` takes an OS lock on an open file so that one process at a time writes it;
the lock goes away with the process, however it ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys

from sigform.errors import FileLocked, NotRegularFile

__all__ = [
    "MAX_STATE_BYTES",
    "FileLocked",
    "NotRegularFile",
    "lock_exclusive",
    "open_regular",
    "read_regular",
    "write_atomic",
]

# a small state file (a few hundred bytes) is read up to this; a longer one is not JSON then, and
# counts as absent instead of costing seconds and memory to read (300 MB: 4.3 s)
MAX_STATE_BYTES = 1 << 16

logger = logging.getLogger("sigform")
_warned: set[str] = set()


def open_regular(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never blocks on a FIFO and returns only a regular file's descriptor.

    Raises :class:`NotRegularFile` (the descriptor closed) for anything else, and the usual
    ``OSError`` for a missing file (without ``O_CREAT``) or a denied one."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | nonblock | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{os.fspath(path)} is not a regular file ({_kind(info.st_mode)})")
        if nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int = MAX_STATE_BYTES) -> bytes:
    """The bytes of a regular file, without waiting on a FIFO or reading a device: anything but a
    regular file raises :class:`NotRegularFile`, after one logged warning per path saying it is
    ignored (a state or cache file turned into a FIFO would otherwise hang every call that reads
    it). A file longer than ``limit`` bytes raises ``ValueError`` after reading ``limit + 1``."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except NotRegularFile as exc:
        if str(exc) not in _warned:
            _warned.add(str(exc))
            logger.warning("sigform: ignoring %s", exc)
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{os.fspath(path)} is larger than {limit} bytes")
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` in one step: written to a new file of a random name beside
    it (created exclusively, so nothing already there -- a FIFO, a symlink to another file -- is
    opened or written through), then renamed over ``path``. A predictable temporary name
    (``state.json.<pid>.tmp``) would let anyone who can write the folder hang the writer with a
    FIFO or redirect the write with a symlink."""
    import tempfile

    target = os.fspath(path)
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _kind(st_mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket")):
        if test(st_mode):
            return name
    return "a device" if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode) else "not a file"


def lock_exclusive(fd: int, path: str) -> None:
    """Lock the whole open file for this process, or raise :class:`FileLocked` at once.

    The lock belongs to the open file (``flock``): closing the descriptor, or the process
    ending, releases it; a second open of the same file, in this process or another, is refused."""
    if sys.platform == "win32":  # pragma: no cover - not run on the CI machines
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            raise FileLocked(path, None, f"{path} is locked by another process") from None
        return
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _flock_holder(fd)
        raise FileLocked(path, holder, f"{path} is locked by {describe_process(holder)}") from None


def _flock_holder(fd: int) -> int | None:
    """The pid holding a ``flock`` on ``fd``'s file, from ``/proc/locks`` (Linux), if listed."""
    info = os.fstat(fd)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; waiters have "->" after the number
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == inode and parts[4].isdigit():
            return int(parts[4])
    return None


def describe_process(pid: int | None) -> str:
    """``process 4242 (python3)``, or ``another process`` when the pid is unknown (the name comes
    from ``/proc/<pid>/comm``; never the command line, which may hold a key)."""
    if pid is None:
        return "another process"
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            name = handle.read().strip()
    except OSError:
        return f"process {pid}"
    safe = "".join(c if c.isprintable() else "?" for c in name)[:32]
    return f"process {pid} ({safe})" if safe else f"process {pid}"
