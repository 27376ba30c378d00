"""The disk side of the response cache (:mod:`sigform.lm.cache`): the SQLite store of keys and
bytes, the cache folder's fingerprint secret, and the one writer thread that stores entries in
batches off the caller's thread."""

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
from sigform.files import NotRegularFile, open_regular, write_atomic

logger = logging.getLogger("sigform.lm")

_BATCH_WAIT = 0.02
# another process can hold the store's write lock for as long as it likes: an SQLite statement
# waits at most LOCK_TIMEOUT for it, then the call goes on without the disk
LOCK_TIMEOUT = 1.0
SECRET_FILE = "cache-secret"
SECRET_BYTES = 32
# what a broken or hostile store raises: a miss (and the disk bypassed), never the caller's error
STORE_ERRORS = (sqlite3.Error, OSError)


class CacheWarning(UserWarning):
    """The disk cache could not be used as it is (it is bypassed or the entry ignored)."""


class Writable(Protocol):
    def write_many(self, items: list[tuple[str, bytes]]) -> None: ...


def locked(exc: BaseException) -> bool:
    """Whether ``exc`` is another process's lock outlasting :data:`LOCK_TIMEOUT`."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


class Store:
    """The disk store: one SQLite table of keys and bytes (``<folder>/responses.sqlite``), the
    least recently stored entries evicted past ``size_limit`` bytes. It holds data only: a
    value is bytes for :mod:`sigform.lm.cache_codec` to check, no row names a file or a setting."""

    def __init__(self, folder: Path, size_limit: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.size_limit = size_limit
        self._lock = threading.RLock()  # one statement (or write batch) at a time on the connection
        self._db = sqlite3.connect(
            folder / "responses.sqlite", timeout=LOCK_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        try:  # WAL: readers never wait for another process's writer
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        except BaseException:
            self._db.close()
            raise

    def _run(self, sql: str, *args: object) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def get(self, key: str) -> bytes | None:
        rows = self._run("SELECT value FROM entries WHERE key = ?", key)
        return rows[0][0] if rows else None

    def write_many(self, items: list[tuple[str, bytes]]) -> None:
        """Store ``items`` in one transaction, then evict the oldest entries past the limit (a
        replaced key counts as just stored: it gets a new rowid)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?)", items)
                while self.volume() > self.size_limit and self._db.execute(
                    "DELETE FROM entries WHERE rowid IN (SELECT rowid FROM entries ORDER BY rowid "
                    "LIMIT max(1, (SELECT count(*) FROM entries) / 10))"
                ).rowcount:
                    pass
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def volume(self) -> int:
        """Bytes in use by the database (its pages holding data)."""
        pages = "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, "
        return int(self._run(pages + "pragma_freelist_count, pragma_page_size")[0][0])

    def clear(self) -> None:
        self._run("DELETE FROM entries")

    def __len__(self) -> int:
        return int(self._run("SELECT count(*) FROM entries")[0][0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


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
