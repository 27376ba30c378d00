"""Response cache: an in-memory LRU in front of an on-disk cache (diskcache), shared by all LMs.

Entries are stored as data -- versioned JSON of the completions (:mod:`sigform.lm.cache_codec`),
never pickle -- so every hit returns fresh objects (mutating a returned value cannot poison the
cache) and a stored value is only ever parsed, never run. The disk cache is untrusted: a
garbage ``cache.db``, an entry that does not decode (including pickled entries of older
versions) or a cache path that is a file is a miss with one warning; a broken store is bypassed
for the rest of the process (delete the folder to rebuild it). diskcache settings stored in the
database are ignored, pickled values are refused and no file outside the cache folder is read or
removed.

Cache keys are request digests (:func:`sigform.lm.request.cache_key`) that include a keyed
fingerprint of the request's credentials and headers: an HMAC with a random secret kept next to
the cache (``cache-secret``, mode 0600), so two API keys never share entries and the key cannot
be recovered or confirmed from the cache.

Where the cache lives, in order: the ``cache_dir`` setting (``sigform.configure(cache_dir=...)``
or ``sigform.context(cache_dir=...)``), the ``SIGFORM_CACHE_DIR`` environment variable, then
``~/.cache/sigform``. The disk size limit is the ``cache_size_limit`` setting in bytes (default
1 GiB; least recently stored entries are evicted); ``cache_memory_entries`` bounds the memory LRU
(default 4096). ``cache_disk=False`` keeps the cache in memory only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from sigform import runtime
from sigform.lm import cache_codec, cache_disk
from sigform.lm.cache_disk import (
    LOCK_TIMEOUT,
    OPEN_WAIT,
    SECRET_BYTES,
    STORE_ERRORS,
    CacheWarning,
    locked,
    read_or_make_secret,
    safe_disk,
)
from sigform.lm.credentials import CredentialError
from sigform.lm.interface import Completion
from sigform.lm.request import Request, credential_identity
from sigform.settings import get_setting

__all__ = [
    "DEFAULT_MEMORY_ENTRIES",
    "DEFAULT_SIZE_LIMIT",
    "CacheWarning",
    "ResponseCache",
    "cache_directory",
    "clear_caches",
    "get_cache",
    "reset_caches",
    "scoped_key",
]

logger = logging.getLogger("sigform.lm")

DEFAULT_SIZE_LIMIT = 1 << 30
DEFAULT_MEMORY_ENTRIES = 4096


def cache_directory() -> Path:
    """The effective cache directory (settings, then ``SIGFORM_CACHE_DIR``, then ~/.cache/sigform)."""
    configured = get_setting("cache_dir") or os.environ.get("SIGFORM_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sigform"


class ResponseCache:
    """Two-level cache of completions (stored as JSON bytes) keyed by request digests."""

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
        self._opened: threading.Event | None = None  # set once the store's opening has ended
        self._broken = False  # the disk store failed once: bypassed from then on
        self._busy_warned = False  # the store was locked by another process (said once)
        self._warned_entry = False
        self._secret: bytes | None = None
        runtime.forget_after_fork(self)

    def _after_fork(self) -> None:
        # a forked child: the lock may have been held by another thread of the parent, whose
        # pending writes are the parent's to make
        self._lock = threading.Lock()
        self._pending = {}
        if self._disk is None:
            self._opened = None  # the parent's opening thread does not run here: open anew

    # -- fingerprints ----------------------------------------------------------------------

    def fingerprint(self, data: bytes) -> str:
        """HMAC-SHA256 of ``data`` under this cache's secret (per cache folder; per process for
        a memory-only or unusable folder)."""
        secret = self._secret
        if secret is None:
            with self._lock:
                if self._secret is None:
                    self._secret = self._load_secret()
                secret = self._secret
        return hmac.new(secret, data, hashlib.sha256).hexdigest()

    def _load_secret(self) -> bytes:
        if self.directory is not None and not self._broken:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                return read_or_make_secret(self.directory)
            except OSError as exc:
                self._bypass(f"cannot keep the cache secret in {self.directory} ({exc})")
        return secrets.token_bytes(SECRET_BYTES)

    # -- the disk store --------------------------------------------------------------------

    def _bypass(self, why: str) -> None:
        """Stop using the disk store for this process, saying so once."""
        if not self._broken:
            self._broken = True
            self._warn(f"disk cache bypassed, answers are cached in memory only: {why}. Delete "
                       f"{self.directory} to rebuild it")

    def _warn(self, message: str) -> None:
        warnings.warn(f"sigform: {message}", CacheWarning, stacklevel=4)

    @property
    def _store(self) -> Path | None:
        """The diskcache folder (None for a memory-only cache)."""
        return self.directory / "lm" if self.directory is not None else None

    def _disk_cache(self) -> Any:
        """The open diskcache store, or None (memory only, bypassed, or not open yet because
        another process holds its write lock: opening it writes its settings)."""
        if self.directory is None or self._broken:
            return None
        disk = self._disk
        if disk is not None:
            return disk
        with self._lock:
            opened = self._opened
            if opened is None:  # opened on a thread, so that a call can stop waiting for it
                import diskcache  # noqa: F401 - here, never in that thread (a fork mid-import hangs)

                opened = self._opened = threading.Event()
                opener = threading.Thread(target=self._open_disk, args=(opened,), name="sigform-cache-open")
                opener.daemon = True
                opener.start()
        if not opened.wait(0 if self._busy_warned else OPEN_WAIT):
            self._busy()
        return self._disk

    def _open_disk(self, opened: threading.Event) -> None:
        import diskcache  # imported on first use: keeps `import sigform` light

        assert self.directory is not None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # every setting given here: none is taken from the (untrusted) database; no
            # eviction pass per entry (cull_limit=0): the writer culls once per batch
            settings = {**diskcache.DEFAULT_SETTINGS, "size_limit": self.size_limit, "cull_limit": 0}
            disk = diskcache.Cache(str(self._store), timeout=LOCK_TIMEOUT, disk=safe_disk(), **settings)
        except STORE_ERRORS as exc:
            self._bypass(f"cannot open {self._store} ({type(exc).__name__}: {exc})")
        else:
            with self._lock:
                if self._opened is opened:
                    self._disk = disk
                else:  # closed meanwhile
                    disk.close()
        finally:
            opened.set()

    def _busy(self) -> None:
        """Another process holds the store's lock: this call goes on without it (said once)."""
        if not self._busy_warned:
            self._busy_warned = True
            self._warn(f"the disk cache in {self.directory} is locked by another process; calls go "
                       "on without it (answers cached in memory) until it is free")

    def _disk_get(self, key: str) -> Any:
        disk = self._disk_cache()
        if disk is None:
            return None
        try:
            return disk.get(key)
        except STORE_ERRORS as exc:
            if locked(exc):
                self._busy()
                return None
            if isinstance(exc, ValueError) and not isinstance(exc, sqlite3.Error):
                self._bad_entry(str(exc))  # one forged row: a miss, the store stays in use
                return None
            self._bypass(f"cannot read {self._store} ({type(exc).__name__}: {exc})")
            return None

    def _bad_entry(self, why: str) -> None:
        if not self._warned_entry:
            self._warned_entry = True
            self._warn(f"ignored a cache entry in {self.directory} that is not valid ({why}); "
                       "it is treated as a miss")

    # -- entries ---------------------------------------------------------------------------

    def get(self, key: str, count: int | None = None) -> list[Completion] | None:
        """A fresh copy of the completions stored under ``key``, or None (also for an entry that
        does not decode, or that holds other than ``count`` completions when given: a forged
        row's extra or missing candidates are never an answer)."""
        with self._lock:
            blob = self._memory.get(key)
            if blob is not None:
                self._memory.move_to_end(key)
            else:
                blob = self._pending.get(key)  # evicted from memory before its disk write
        if blob is None:
            blob = self._disk_get(key)
            if blob is None:
                return None
            try:
                value = cache_codec.decode(blob)
            except cache_codec.CacheEntryError as exc:
                self._bad_entry(str(exc))
                return None
            if count is not None and len(value) != count:
                self._bad_entry(f"{len(value)} completions stored, {count} asked for")
                return None
            self._remember(key, blob)
            return value
        return cache_codec.decode(blob)

    def set(self, key: str, value: list[Completion]) -> None:
        """Store a snapshot of ``value`` (later changes to ``value`` do not reach the cache).

        The memory layer is updated at once; the disk write happens on a background thread
        (flushed at exit and by :meth:`flush`), so a call does not wait for SQLite. A value that is
        not JSON data (an exotic ``logprobs`` object) is not cached."""
        try:
            blob = cache_codec.encode(value)
        except (TypeError, ValueError):
            logger.debug("sigform: completions not cached (not JSON data)", exc_info=True)
            return
        self._remember(key, blob)
        if self.directory is not None and not self._broken:
            with self._lock:
                self._pending[key] = blob
            cache_disk.writer.put(self, key, blob)

    def write_many(self, items: list[tuple[str, bytes]]) -> None:
        disk = self._disk_cache()
        try:
            if disk is not None:
                with disk.transact():
                    for key, blob in items:
                        disk.set(key, blob)
                if disk.volume() > self.size_limit:
                    disk.cull()
        except Exception as exc:
            if locked(exc):
                self._busy()  # these entries stay in memory only
            elif isinstance(exc, STORE_ERRORS):
                self._bypass(f"cannot write {self._store} ({type(exc).__name__}: {exc})")
            else:
                raise
        finally:
            with self._lock:
                for key, blob in items:
                    if self._pending.get(key) is blob:
                        del self._pending[key]

    def flush(self) -> None:
        """Wait until every pending disk write is done."""
        cache_disk.writer.flush()

    def _remember(self, key: str, blob: bytes) -> None:
        with self._lock:
            self._memory[key] = blob
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry, in memory and on disk."""
        cache_disk.writer.flush()
        with self._lock:
            self._memory.clear()
        disk = self._disk_cache()
        if disk is not None:
            try:
                disk.clear()
            except STORE_ERRORS as exc:
                self._bypass(f"cannot clear {self._store} ({type(exc).__name__}: {exc})")

    def __len__(self) -> int:
        cache_disk.writer.flush()
        disk = self._disk_cache()
        if disk is None:
            return len(self._memory)
        try:
            return len(disk)
        except STORE_ERRORS:
            return len(self._memory)

    def close(self) -> None:
        cache_disk.writer.flush()
        with self._lock:
            disk, self._disk, self._opened = self._disk, None, None  # a later call opens it again
        if disk is not None:
            try:
                disk.close()
            except STORE_ERRORS:
                pass

    def __repr__(self) -> str:
        where = str(self.directory) if self.directory else "memory only"
        return f"ResponseCache({where}, memory_entries={self.memory_entries})"


_caches: dict[tuple[str | None, int, int], ResponseCache] = {}
_caches_lock = threading.Lock()


def _new_lock() -> None:
    global _caches_lock
    _caches_lock = threading.Lock()  # a forked child: the parent's holder does not run here


runtime.on_fork(_new_lock)
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
    reset_caches()


def reset_caches() -> None:
    """Close and forget every open cache without deleting entries (the next call reopens)."""
    with _caches_lock:
        for cache in _caches.values():
            cache.close()
        _caches.clear()
        _by_settings.clear()


def scoped_key(key: str, request: Request, cache: ResponseCache | None = None) -> str | None:
    """``key`` (a request digest) scoped to who asks: combined with a keyed fingerprint of the
    request's credentials, connection settings and headers (:func:`credential_identity`) under the
    cache's secret. None when a credential cannot be resolved: the call is then not cached (and
    fails when sent, with the credential's own error)."""
    try:
        identity = credential_identity(request)
    except CredentialError:
        return None
    scope = (cache if cache is not None else get_cache()).fingerprint(identity)
    return hashlib.sha256(f"{key}:{scope}".encode("ascii")).hexdigest()
