"""The disk side of the response cache (:mod:`sigform.lm.cache`): a diskcache ``Disk`` that reads
stored values as bytes only, the cache folder's fingerprint secret, and the one writer thread that
stores entries in batches off the caller's thread."""

from __future__ import annotations

import logging
import os
import queue
import secrets
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Protocol

from sigform import runtime
from sigform.files import NotRegularFile, open_regular, read_regular, write_atomic

logger = logging.getLogger("sigform.lm")

_BATCH_WAIT = 0.02
# another process can hold the store's write lock for as long as it likes: a call waits at most
# OPEN_WAIT seconds for the store to open, and each SQLite statement at most LOCK_TIMEOUT, then
# goes on without the disk (diskcache's own defaults are 60 s each)
OPEN_WAIT = 2.0
LOCK_TIMEOUT = 1.0
SECRET_FILE = "cache-secret"
MAX_ENTRY_BYTES = 256 << 20  # a larger value file is not read (a miss)
SECRET_BYTES = 32
# what a broken or hostile store raises: a miss (and the disk bypassed), never the caller's error
STORE_ERRORS = (sqlite3.Error, OSError, ValueError, TypeError, KeyError, EOFError)


class CacheWarning(UserWarning):
    """The disk cache could not be used as it is (it is bypassed or the entry ignored)."""


class Writable(Protocol):
    def write_many(self, items: list[tuple[str, bytes]]) -> None: ...


def locked(exc: BaseException) -> bool:
    """Whether ``exc`` is another process's lock outlasting :data:`LOCK_TIMEOUT`."""
    import diskcache

    return isinstance(exc, diskcache.Timeout) or (
        isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
    )


def safe_disk() -> type:
    """A diskcache ``Disk`` that reads stored values as bytes only: it refuses pickled values and
    files outside the cache folder (a forged row could name any path), and removes none there."""
    import diskcache
    from diskcache.core import MODE_BINARY, MODE_RAW

    class SafeDisk(diskcache.Disk):  # type: ignore[misc]
        def __init__(self, directory: str, *args: object, **kwargs: object) -> None:
            super().__init__(directory, *args, **kwargs)
            self.root = os.path.realpath(directory)  # its own copy: Disk's is a private field

        def _inside(self, filename: Any) -> str:
            root = self.root
            full = os.path.realpath(os.path.join(root, str(filename)))
            if os.path.commonpath([root, full]) != root:
                raise ValueError("a cache row names a file outside the cache folder")
            return full

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            if mode == MODE_RAW:
                return bytes(value) if isinstance(value, (bytes, memoryview)) else value
            if mode == MODE_BINARY and not read:
                # a forged row may name a FIFO (open() waited forever) or a huge sparse file
                return read_regular(self._inside(filename), MAX_ENTRY_BYTES)
            raise ValueError(f"cache value stored in mode {mode} is not read (only raw bytes)")

        def remove(self, file_path: Any) -> None:
            try:
                full = self._inside(file_path)
            except ValueError:
                return
            super().remove(os.path.relpath(full, self.root))

    return SafeDisk


def read_or_make_secret(directory: Path) -> bytes:
    """The cache folder's fingerprint secret: 32 random bytes in ``cache-secret`` (mode 0600),
    made on first use; a file that is not exactly that (a link, wrong size, readable by others) is
    replaced by a fresh secret (old entries become misses)."""
    path = directory / SECRET_FILE
    try:
        fd = open_regular(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # a FIFO: no wait
        try:
            info = os.fstat(fd)
            data = os.read(fd, SECRET_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) == SECRET_BYTES and not info.st_mode & 0o077:
            return data
    except NotRegularFile as exc:
        warnings.warn(f"sigform: {exc}; replacing it with a new cache secret", CacheWarning, stacklevel=4)
    except OSError:
        pass  # missing, a link or unreadable: replaced below
    data = secrets.token_bytes(SECRET_BYTES)
    write_atomic(path, data, mode=0o600)
    return data


class DiskWriter:
    """One daemon thread that performs disk-cache writes in order."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Writable, str, bytes] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, cache: Writable, key: str, blob: bytes) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="sigform-cache-writer", daemon=True
                    )
                    self._thread.start()
                    runtime.on_exit(_flush_at_exit)
        self._queue.put((cache, key, blob))

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            time.sleep(_BATCH_WAIT)  # gather a burst: one transaction per batch, not per entry
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                by_cache: dict[int, list[tuple[Writable, str, bytes]]] = {}
                for item in batch:
                    if item is not None:
                        by_cache.setdefault(id(item[0]), []).append(item)
                for items in by_cache.values():
                    items[0][0].write_many([(key, blob) for _, key, blob in items])
            except Exception:
                logger.warning("sigform: could not write disk-cache entries", exc_info=True)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def flush(self) -> None:
        if self._thread is not None and self._thread is not threading.current_thread():
            self._queue.join()


def _flush_at_exit() -> None:
    writer.flush()  # the writer of this process (a forked child has its own)


def _new_writer() -> None:
    # a forked child: the parent's writer thread does not exist here and its queue holds the
    # parent's unfinished writes (joining it at exit hung the child for ever)
    global writer
    writer = DiskWriter()


writer = DiskWriter()
runtime.on_fork(_new_writer)
