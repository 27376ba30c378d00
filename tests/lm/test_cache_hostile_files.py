"""A corrupted or hostile disk cache (issue 13 item 6) is a miss with one warning, never a raw
DatabaseError/UnpicklingError, and never runs code: entries are JSON data, pickled values (old
entries or forged ones) are not unpickled, and no file outside the cache folder is read or
removed."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer

from sigform import track_usage
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


def forge(db: sqlite3.Connection, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Rewrite every stored entry's completions (JSON) with ``edit``, keeping its format."""
    for key, value in db.execute("SELECT key, value FROM Cache").fetchall():
        magic, body = bytes(value).split(b"\n", 1)
        forged = json.dumps(edit(json.loads(body)), allow_nan=True).encode()
        db.execute("UPDATE Cache SET value = ? WHERE key = ?", (magic + b"\n" + forged, key))


def with_usage(**figures: object) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def edit(entry: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for completion in entry:
            completion["text"] = "FORGED"
            completion["usage"].update(figures)
        return entry

    return edit


def forged_text(entry: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for completion in entry:
        completion["text"] = "FORGED"
    return entry


@pytest.mark.parametrize(
    ("n", "edit"),
    [
        (1, lambda entry: forged_text(entry * 2)),  # more candidates than asked for
        (3, lambda entry: forged_text(entry[:1])),  # fewer
        (1, with_usage(prompt_tokens=-(10**9))),  # figures that would corrupt usage totals
        (1, with_usage(completion_tokens=10**400)),
        (1, with_usage(cost=float("nan"))),
        (1, with_usage(cost=float("inf"))),
        (1, with_usage(cost=-5.0)),
    ],
    ids=["more", "fewer", "negative-tokens", "huge-tokens", "nan-cost", "inf-cost", "negative-cost"],
)
def test_a_forged_entry_that_parses_but_cannot_be_right_is_a_miss(
    lm_server: FakeOpenAIServer,
    isolated_cache: Path,
    n: int,
    edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="sk-k")
    lm(MSG, n=n)
    with cached_rows(isolated_cache) as db:
        forge(db, edit)
    with pytest.warns(CacheWarning, match="not valid"), track_usage() as usage:
        again = LM("openai/fake", api_base=lm_server.api_base, api_key="sk-k")(MSG, n=n)
    assert [c.text for c in again] == ["echo: hi"] * n
    assert usage.cache_hits == 0


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


# -- FIFOs named like the cache folder's files (issue 27, finding 13) ---------------------------

_FIFO_RUN = """
import sys
sys.path.insert(0, {root!r})
import logging, warnings
logging.basicConfig(level=logging.WARNING, format="LOG %(message)s")
warnings.simplefilter("always")
import sigform as sf
from sigform.lm.capabilities import _read_file
from sigform.local._state import read_state
from pathlib import Path
folder = Path({folder!r})
print("state", read_state(folder / "local-server.json"), flush=True)
print("capabilities", _read_file(folder / "endpoint-capabilities.json").get("endpoints", {{}}), flush=True)
lm = sf.LM("openai/fake", api_base={api_base!r}, api_key="sk-k", cache=True)
print("answer", lm("hi")[0].text, flush=True)
"""


_FORGED_FILE_RUN = """
import sys
sys.path.insert(0, {root!r})
import warnings
warnings.simplefilter("always")
from sigform.lm import LM
print("answer", LM("openai/fake", api_base={api_base!r}, api_key="sk-k")("hi")[0].text, flush=True)
"""


def test_a_forged_row_naming_a_fifo_in_the_cache_is_not_waited_on(
    lm_server: FakeOpenAIServer, isolated_cache: Path
) -> None:
    # a row's value file opened with open(): a FIFO there waited for a writer forever
    import subprocess
    import sys

    LM("openai/fake", api_base=lm_server.api_base, api_key="sk-k")("hi")
    with cached_rows(isolated_cache) as db:
        db.execute("UPDATE Cache SET value = NULL, mode = ?, filename = ?", (MODE_BINARY, "forged"))
    os.mkfifo(isolated_cache / "lm" / "forged")
    root = str(Path(__file__).resolve().parents[2])
    script = _FORGED_FILE_RUN.format(root=root, api_base=lm_server.api_base)
    env = {**os.environ, "SIGFORM_CACHE_DIR": str(isolated_cache)}
    try:
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the call waited on the FIFO")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "answer echo: hi" in done.stdout.decode()
    assert len(lm_server.requests) == 2  # a miss (diskcache reads an OSError as a missing row)


def test_fifos_named_like_cache_and_state_files_are_ignored_not_waited_on(tmp_path: Path) -> None:
    # a FIFO named cache-secret or local-server.json in the cache folder hung every call: opening
    # it for reading waits for a writer that never comes
    import subprocess
    import sys

    from sigform.testing.providers import OpenAIChatFake, Reply

    folder = tmp_path / "cache"
    folder.mkdir()
    for name in ("cache-secret", "local-server.json", "endpoint-capabilities.json"):
        os.mkfifo(folder / name)
    root = str(Path(__file__).resolve().parents[2])
    with OpenAIChatFake(default=Reply("an answer")) as fake:
        script = _FIFO_RUN.format(root=root, folder=str(folder), api_base=fake.api_base)
        env = {**os.environ, "SIGFORM_CACHE_DIR": str(folder)}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=60)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err[-2000:]
    assert "state None" in out and "capabilities {}" in out and "answer an answer" in out
    for name in ("local-server.json", "endpoint-capabilities.json"):
        assert err.count(f"LOG sigform: ignoring {folder / name} is not a regular file (a FIFO)") == 1, err
    assert err.count("cache-secret is not a regular file (a FIFO); replacing it") == 1, err
    secret = (folder / "cache-secret").stat()
    assert secret.st_mode & 0o777 == 0o600 and secret.st_size == 32  # a regular file again


# -- another process's write lock (issue 27, finding 14) ----------------------------------------

_HOLD_LOCK = """
import sys, time
import diskcache
cache = diskcache.Cache({store!r})
with cache.transact():  # BEGIN IMMEDIATE: the database's write lock, held
    print("locked", flush=True)
    time.sleep(120)
"""

_CACHED_CALL = """
import sys
sys.path.insert(0, {root!r})
import warnings
warnings.simplefilter("always")
import sigform as sf

lm = sf.LM("openai/fake", api_base={api_base!r}, api_key="sk-k", cache=True)
print("answer", lm("hi")[0].text, flush=True)
print("again", lm("hi")[0].text, lm.stats["cache_hits"], flush=True)
"""


def test_another_process_holding_the_write_lock_does_not_stall_a_call(tmp_path: Path) -> None:
    # the first call of a new process waited as long as another process held diskcache's
    # write lock (20-60 s: opening the store writes its settings, retried for 60 s)
    import subprocess
    import sys

    from sigform.testing.providers import OpenAIChatFake, Reply

    folder = tmp_path / "cache"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK.format(store=str(folder / "lm"))], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        root = str(Path(__file__).resolve().parents[2])
        with OpenAIChatFake(default=Reply("an answer")) as fake:
            script = _CACHED_CALL.format(root=root, api_base=fake.api_base)
            env = {**os.environ, "SIGFORM_CACHE_DIR": str(folder)}
            done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=40)
            asked = len(fake.requests)
        assert holder.poll() is None  # the lock was held all along
    finally:
        holder.kill()
        holder.wait()
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err[-2000:]
    assert "answer an answer" in out and "again an answer 1" in out and asked == 1  # memory still caches
    assert err.count("is locked by another process; calls go on without it") == 1, err
