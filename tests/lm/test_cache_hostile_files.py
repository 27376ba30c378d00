"""A corrupted or hostile disk cache (issue 13 item 6) is a miss with one warning, never a raw
DatabaseError/UnpicklingError, and never runs code: entries are JSON data, pickled values (old
entries or forged ones) are not unpickled, and no file outside the cache folder is read or
removed."""

from __future__ import annotations

import os
import pickle
import sqlite3
import warnings
from pathlib import Path

import pytest
from lm_fake_openai import FakeOpenAIServer

from sigform.lm import LM, get_cache
from sigform.lm.cache import CacheWarning, reset_caches

MSG = [{"role": "user", "content": "hi"}]
MODE_RAW, MODE_BINARY, MODE_PICKLE = 1, 2, 4  # diskcache's value modes


def call(fake: FakeOpenAIServer) -> str:
    return LM("openai/fake", api_base=fake.api_base, api_key="sk-k")(MSG)[0].text


def cached_rows(cache_dir: Path) -> sqlite3.Connection:
    """Write one real entry, then open the cache database as an attacker would."""
    get_cache().flush()
    reset_caches()
    return sqlite3.connect(cache_dir / "lm" / "cache.db")


class RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))  # unpickling creates the marker file


def test_a_garbage_database_is_bypassed_with_one_warning(
    lm_server: FakeOpenAIServer, isolated_cache: Path
) -> None:
    (isolated_cache / "lm").mkdir(parents=True)
    (isolated_cache / "lm" / "cache.db").write_bytes(b"this is not a database\0" * 500)
    with pytest.warns(CacheWarning, match="bypassed") as caught:
        assert call(lm_server) == "echo: hi"
        assert call(lm_server) == "echo: hi"  # still cached, in memory
    assert len(lm_server.requests) == 1
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1


def test_a_cache_path_that_is_a_file_is_bypassed(
    lm_server: FakeOpenAIServer, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_cache.parent.mkdir(parents=True, exist_ok=True)
    isolated_cache.write_text("not a folder")
    with pytest.warns(CacheWarning, match="bypassed"):
        assert call(lm_server) == "echo: hi"
    assert call(lm_server) == "echo: hi"
    assert len(lm_server.requests) == 1


def test_bad_stored_values_are_misses(lm_server: FakeOpenAIServer, isolated_cache: Path) -> None:
    call(lm_server)
    with cached_rows(isolated_cache) as db:
        db.execute("UPDATE Cache SET value = ?, mode = ?", (b"\x00garbage{", MODE_RAW))
    with pytest.warns(CacheWarning, match="not valid"):
        assert call(lm_server) == "echo: hi"
    assert len(lm_server.requests) == 2  # a miss: asked again, and stored again
    reset_caches()
    assert call(lm_server) == "echo: hi"
    assert len(lm_server.requests) == 2


@pytest.mark.parametrize("mode", [MODE_RAW, MODE_PICKLE])
def test_pickled_entries_are_never_unpickled(
    lm_server: FakeOpenAIServer, isolated_cache: Path, tmp_path: Path, mode: int
) -> None:
    # MODE_RAW: how older sigform versions stored pickled completions; MODE_PICKLE: diskcache's own
    marker = tmp_path / "code-ran"
    call(lm_server)
    with cached_rows(isolated_cache) as db:
        db.execute("UPDATE Cache SET value = ?, mode = ?", (pickle.dumps(RunsCode(marker)), mode))
    with pytest.warns(CacheWarning):
        assert call(lm_server) == "echo: hi"
    assert not marker.exists()
    assert len(lm_server.requests) == 2


def test_a_forged_row_cannot_read_or_delete_files_outside_the_cache(
    lm_server: FakeOpenAIServer, isolated_cache: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    call(lm_server)
    with cached_rows(isolated_cache) as db:
        db.execute(
            "UPDATE Cache SET value = NULL, mode = ?, filename = ?",
            (MODE_BINARY, os.path.relpath(victim, isolated_cache / "lm")),
        )
    with pytest.warns(CacheWarning):
        assert call(lm_server) == "echo: hi"
    get_cache().clear()
    assert victim.read_text() == "precious"


def test_settings_stored_in_the_database_are_not_taken(
    lm_server: FakeOpenAIServer, isolated_cache: Path
) -> None:
    call(lm_server)
    with cached_rows(isolated_cache) as db:
        db.execute("UPDATE Settings SET value = 'none' WHERE key = 'eviction_policy'")
        db.execute("UPDATE Settings SET value = 1 WHERE key = 'size_limit'")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert call(lm_server) == "echo: hi"  # still a hit from the disk
    cache = get_cache()
    assert cache._disk_cache().eviction_policy == "least-recently-stored"
    assert len(lm_server.requests) == 1
