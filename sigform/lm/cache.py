"""Response cache: an in-memory LRU in front of an on-disk cache (diskcache), shared by all LMs.

Entries are pickled snapshots, so every hit returns fresh objects and mutating a returned value
(a tool call's arguments dict, the logprobs) cannot poison the cache.

Where the cache lives, in order: the ``cache_dir`` setting (``sigform.configure(cache_dir=...)``
or ``sigform.context(cache_dir=...)``), the ``SIGFORM_CACHE_DIR`` environment variable, then
``~/.cache/sigform``. The disk size limit is the ``cache_size_limit`` setting in bytes (default
1 GiB; least recently stored entries are evicted); ``cache_memory_entries`` bounds the memory LRU
(default 4096). ``cache_disk=False`` keeps the cache in memory only.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import queue
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from sigform.settings import get_setting

__all__ = [
    "DEFAULT_MEMORY_ENTRIES",
    "DEFAULT_SIZE_LIMIT",
    "ResponseCache",
    "cache_directory",
    "clear_caches",
    "get_cache",
    "reset_caches",
]

logger = logging.getLogger("sigform.lm")

DEFAULT_SIZE_LIMIT = 1 << 30
DEFAULT_MEMORY_ENTRIES = 4096
_BATCH_WAIT = 0.02


def cache_directory() -> Path:
    """The effective cache directory (settings, then ``SIGFORM_CACHE_DIR``, then ~/.cache/sigform)."""
    configured = get_setting("cache_dir") or os.environ.get("SIGFORM_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sigform"


class ResponseCache:
    """Two-level cache of pickled values keyed by request digests."""

    def __init__(
        self,
        directory: Path | str | None,
        *,
        size_limit: int = DEFAULT_SIZE_LIMIT,
        memory_entries: int = DEFAULT_MEMORY_ENTRIES,
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.size_limit = size_limit
        self.memory_entries = memory_entries
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._pending: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._disk: Any = None

    def _disk_cache(self) -> Any:
        if self.directory is None:
            return None
        if self._disk is None:
            import diskcache  # imported on first use: keeps `import sigform` light

            self.directory.mkdir(parents=True, exist_ok=True)
            # no eviction pass per entry (cull_limit=0): the writer culls once per batch
            self._disk = diskcache.Cache(str(self.directory / "lm"), size_limit=self.size_limit, cull_limit=0)
        return self._disk

    def get(self, key: str) -> Any | None:
        """A fresh copy of the value stored under ``key``, or None."""
        with self._lock:
            blob = self._memory.get(key)
            if blob is not None:
                self._memory.move_to_end(key)
            else:
                blob = self._pending.get(key)  # evicted from memory before its disk write
        if blob is None:
            disk = self._disk_cache()
            blob = disk.get(key) if disk is not None else None
            if blob is None:
                return None
            self._remember(key, blob)
        return pickle.loads(blob)

    def set(self, key: str, value: Any) -> None:
        """Store a snapshot of ``value`` (later changes to ``value`` do not reach the cache).

        The memory layer is updated at once; the disk write happens on a background thread
        (flushed at exit and by :meth:`flush`), so a call does not wait for SQLite."""
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self._remember(key, blob)
        if self.directory is not None:
            with self._lock:
                self._pending[key] = blob
            _writer.put(self, key, blob)

    def _write_many(self, items: list[tuple[str, bytes]]) -> None:
        disk = self._disk_cache()
        if disk is not None:
            with disk.transact():
                for key, blob in items:
                    disk.set(key, blob)
            if disk.volume() > self.size_limit:
                disk.cull()
        with self._lock:
            for key, blob in items:
                if self._pending.get(key) is blob:
                    del self._pending[key]

    def flush(self) -> None:
        """Wait until every pending disk write is done."""
        _writer.flush()

    def _remember(self, key: str, blob: bytes) -> None:
        with self._lock:
            self._memory[key] = blob
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry, in memory and on disk."""
        _writer.flush()
        with self._lock:
            self._memory.clear()
        disk = self._disk_cache()
        if disk is not None:
            disk.clear()

    def __len__(self) -> int:
        _writer.flush()
        disk = self._disk_cache()
        return len(disk) if disk is not None else len(self._memory)

    def close(self) -> None:
        _writer.flush()
        if self._disk is not None:
            self._disk.close()
            self._disk = None

    def __repr__(self) -> str:
        where = str(self.directory) if self.directory else "memory only"
        return f"ResponseCache({where}, memory_entries={self.memory_entries})"


class _DiskWriter:
    """One daemon thread that performs disk-cache writes in order."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[ResponseCache, str, bytes] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, cache: ResponseCache, key: str, blob: bytes) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="sigform-cache-writer", daemon=True
                    )
                    self._thread.start()
                    atexit.register(self.flush)
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
                by_cache: dict[int, list[tuple[ResponseCache, str, bytes]]] = {}
                for item in batch:
                    if item is not None:
                        by_cache.setdefault(id(item[0]), []).append(item)
                for items in by_cache.values():
                    items[0][0]._write_many([(key, blob) for _, key, blob in items])
            except Exception:
                logger.warning("sigform: could not write disk-cache entries", exc_info=True)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def flush(self) -> None:
        if self._thread is not None and self._thread is not threading.current_thread():
            self._queue.join()


_writer = _DiskWriter()
_caches: dict[tuple[str | None, int, int], ResponseCache] = {}
_caches_lock = threading.Lock()
_by_settings: dict[tuple[Any, ...], ResponseCache] = {}


def get_cache() -> ResponseCache:
    """The shared cache for the current settings (one instance per directory and limits)."""
    # called on every LM call: the raw settings are the memo key, so the directory path is
    # built only when they change
    raw = (
        get_setting("cache_disk", True),
        get_setting("cache_dir"),
        get_setting("cache_size_limit"),
        get_setting("cache_memory_entries"),
        os.environ.get("SIGFORM_CACHE_DIR"),
        os.environ.get("HOME"),
    )
    try:
        cache = _by_settings.get(raw)
    except TypeError:  # an unhashable setting value: no memo
        return _open_cache()
    if cache is None:
        cache = _by_settings[raw] = _open_cache()
    return cache


def _open_cache() -> ResponseCache:
    disk = get_setting("cache_disk", True)
    directory = str(cache_directory()) if disk else None
    size_limit = int(get_setting("cache_size_limit") or DEFAULT_SIZE_LIMIT)
    entries = int(get_setting("cache_memory_entries") or DEFAULT_MEMORY_ENTRIES)
    ident = (directory, size_limit, entries)
    cache = _caches.get(ident)
    if cache is None:
        with _caches_lock:
            cache = _caches.get(ident)
            if cache is None:
                cache = _caches[ident] = ResponseCache(
                    directory, size_limit=size_limit, memory_entries=entries
                )
    return cache


def clear_caches() -> None:
    """Delete every entry of every cache opened in this process, then close them."""
    with _caches_lock:
        for cache in _caches.values():
            cache.clear()
            cache.close()
        _caches.clear()
        _by_settings.clear()


def reset_caches() -> None:
    """Close and forget every open cache without deleting entries (the next call reopens)."""
    with _caches_lock:
        for cache in _caches.values():
            cache.close()
        _caches.clear()
        _by_settings.clear()
