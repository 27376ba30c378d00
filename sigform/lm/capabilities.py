"""Which structured-output mode an endpoint takes, learned by trying and remembered.

An OpenAI-compatible server no model map knows (vLLM, llama.cpp, Ollama, LM Studio, a proxy) is
asked for the strongest mode first (a strict JSON schema); a rejection steps down to the next
(``json_object`` carrying the schema, plain ``json_object``, then text). What it took is
remembered for the process, per endpoint (model and ``api_base``), from the first rejection on,
and in ``<cache>/endpoint-capabilities.json`` for other processes once a lower mode answered (so a
failure unrelated to the format, a wrong model name or a server that was down, is never recorded
as a missing ability), for :data:`TTL_SECONDS` (an upgraded server is tried again). The same file
keeps what a server said about itself (:func:`record_server`, see :mod:`sigform.lm.text_mode`).

The file is untrusted: read with a size cap; an entry with an unknown mode, a key that is not
text or a timestamp that is not a finite past time is dropped. Keys carry the model name and the
endpoint's scheme, host, port and path only, never user info, query or key.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from pathlib import Path
from typing import Any

from sigform import jsonvalue
from sigform.files import read_regular, write_atomic
from sigform.lm.credentials import memoised_by_url

logger = logging.getLogger("sigform.lm")

# request modes of the JSON adapter, best first; "text" always works
MODES = ("json_schema", "json_object_schema", "json_object", "text")
FILE_NAME = "endpoint-capabilities.json"
TTL_SECONDS = 7 * 24 * 3600
MAX_ENTRIES = 256
MAX_FILE_BYTES = 256 * 1024
MAX_KEY_CHARS = 512
_VERSION = 1

_lock = threading.Lock()
_floors: dict[str, int] = {}  # endpoint -> index into MODES of the best mode still allowed
_saved: dict[str, int] | None = None  # what the file said when this process first looked
_servers: dict[str, dict[str, Any]] = {}  # endpoint -> what its server said (this process)
_saved_servers: dict[str, dict[str, Any]] | None = None
_SERVER_FACTS = {"model_type": ("text", "chat", None), "grammar": (True, False)}


def endpoint_key(model: str, api_base: str | None) -> str:
    """``"<model> at <scheme://host:port/path>"`` (or the model alone without an endpoint).

    User info, query and fragment are left out: they can carry credentials."""
    return f"{model} at {_endpoint(api_base)}" if api_base else model


@memoised_by_url  # asked on every call of a JSON adapter
def _endpoint(api_base: str) -> str:
    from sigform.lm.connection_errors import shown_url

    shown = shown_url(api_base)  # no URL ("user:pw@host/v1": scheme "user"): what follows any "@"
    return shown.rstrip("/") if shown else api_base.split("?")[0].rpartition("@")[2]


def capabilities_path() -> Path:
    """Where the remembered abilities live: ``<cache>/endpoint-capabilities.json``."""
    from sigform.lm.cache import cache_directory

    return cache_directory() / FILE_NAME


def best_mode(key: str, *, saved: bool = True) -> int:
    """Index into :data:`MODES` of the best mode ``key`` may still be asked for (0: nothing
    learned yet, so the strongest is tried). ``saved=False`` ignores what other processes saved."""
    with _lock:
        if key in _floors:
            return _floors[key]
        return _load().get(key, 0) if saved else 0


def record_rejected(key: str, mode: str, next_mode: str) -> bool:
    """Remember for this process that ``key`` rejected ``mode``; True when this is news."""
    after = MODES.index(next_mode)
    with _lock:
        before = _floors.get(key, _load().get(key, 0))
        if after <= before:
            return False
        _floors[key] = after
    return True


def record_answered(key: str, mode: str, *, persist: bool = True) -> None:
    """``key`` answered a request in ``mode``. When modes above it were rejected (or nothing was
    on file), save that to the cache folder for other processes."""
    index = MODES.index(mode)
    if index == 0:
        return  # the strongest mode answered: what every endpoint is assumed to take
    with _lock:
        saved = _load()
        if saved.get(key) == index or _floors.get(key, 0) != index:
            return  # already on file, or no rejection seen in this process: nothing new
        _floors[key] = index
        saved[key] = index
    if persist:
        _write_section("endpoints", key, {"best": MODES[index]})


def server_facts(key: str) -> dict[str, Any] | None:
    """What the server at ``key`` said about itself (``{"model_type": "text" | "chat" | None,
    "grammar": bool}``), or None when it has not been asked (or the answer expired)."""
    with _lock:
        if key in _servers:
            return dict(_servers[key])
        saved = _load_servers().get(key)
        return dict(saved) if saved is not None else None


def record_server(key: str, facts: dict[str, Any], *, persist: bool = True) -> None:
    """Remember what the server at ``key`` said about itself, for this process and (``persist``)
    in the file."""
    facts = {name: facts.get(name) for name in _SERVER_FACTS}
    with _lock:
        _servers[key] = facts
        _load_servers()[key] = facts
    if persist:
        _write_section("servers", key, facts)


def forget(*, disk: bool = False) -> None:
    """Forget what this process learned (tests; after reconfiguring a server). ``disk=True``
    also deletes the file."""
    global _saved, _saved_servers
    with _lock:
        _floors.clear()
        _servers.clear()
        _saved = None
        _saved_servers = None
    if disk:
        with contextlib.suppress(OSError):
            capabilities_path().unlink()


# ---- the file ---------------------------------------------------------------------------------


def _load() -> dict[str, int]:
    """The file's valid, unexpired entries, read once per process (call with ``_lock`` held)."""
    global _saved
    if _saved is None:
        entries = _read_file(capabilities_path()).get("endpoints", {})
        _saved = {key: MODES.index(entry["best"]) for key, entry in entries.items()}
    return _saved


def _load_servers() -> dict[str, dict[str, Any]]:
    """The file's valid, unexpired server facts, read once per process (``_lock`` held)."""
    global _saved_servers
    if _saved_servers is None:
        _saved_servers = {
            key: {name: entry[name] for name in _SERVER_FACTS}
            for key, entry in _read_file(capabilities_path()).get("servers", {}).items()
        }
    return _saved_servers


def _read_file(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each section of the file (``endpoints``, ``servers``) with its valid, unexpired entries."""
    try:
        raw = read_regular(path, MAX_FILE_BYTES)  # a FIFO is ignored, never waited on
    except OSError:
        return {}
    except ValueError:
        logger.warning("ignoring %s: larger than %d bytes", path, MAX_FILE_BYTES)
        return {}
    try:
        data = jsonvalue.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        logger.warning("ignoring %s: not valid JSON", path)
        return {}
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        return {}
    now = time.time()
    sections: dict[str, dict[str, dict[str, Any]]] = {}
    for section, clean in (("endpoints", _mode_entry), ("servers", _facts_entry)):
        raw_entries = data.get(section)
        if not isinstance(raw_entries, dict):
            continue
        sections[section] = {}
        for key, entry in raw_entries.items():
            kept = clean(entry) if _valid(key, entry, now) else None
            if kept is not None:
                sections[section][key] = {**kept, "checked": float(entry["checked"])}
    return sections


def _valid(key: object, entry: object, now: float) -> bool:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or not isinstance(entry, dict):
        return False
    checked = entry.get("checked")
    if isinstance(checked, bool) or not isinstance(checked, (int, float)) or not math.isfinite(checked):
        return False
    return now - TTL_SECONDS < checked <= now + 60


def _mode_entry(entry: dict[str, Any]) -> dict[str, object] | None:
    best = entry.get("best")
    return {"best": best} if isinstance(best, str) and best in MODES else None


def _facts_entry(entry: dict[str, Any]) -> dict[str, object] | None:
    facts = {name: entry.get(name) for name in _SERVER_FACTS}
    model_type, grammar = facts["model_type"], facts["grammar"]
    ok = (model_type is None or isinstance(model_type, str)) and model_type in _SERVER_FACTS["model_type"]
    return facts if ok and isinstance(grammar, bool) else None  # a bool, not 1


def _newest(entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return dict(sorted(entries.items(), key=lambda item: item[1]["checked"], reverse=True)[:MAX_ENTRIES])


def _write_section(section: str, key: str, entry: dict[str, Any]) -> None:
    """Merge one entry into a section of the file (atomic replace; the newest
    :data:`MAX_ENTRIES` of each section kept)."""
    path = capabilities_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sections = _read_file(path)
        sections.setdefault(section, {})[key] = {**entry, "checked": time.time()}
        payload = {"version": _VERSION, **{name: _newest(entries) for name, entries in sections.items()}}
        write_atomic(path, json.dumps(payload, indent=1, sort_keys=True).encode("utf-8"), mode=0o600)
    except OSError as exc:  # a read-only cache folder costs a re-discovery, nothing more
        logger.debug("could not save endpoint capabilities to %s: %s", path, exc)
