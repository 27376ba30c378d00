"""Lifecycle of the shared local server, run against a fake ``llama_cpp.server``.

The fake (``local_fakes``: a ``llama_cpp`` package put first on PYTHONPATH) is started through
the real launcher and command line; it answers ``/v1/models`` like the real server, honours
$HOST/$PORT like uvicorn does, and can be told to crash or hang. This covers start, reuse (threads and
processes), stale state, restarts, stop at exit and start-up errors without the real model.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sigform.errors import LocalModelError
from sigform.local import _process, _server_registry
from sigform.local._state import ServerState, pid_alive, read_state, state_path, write_state

# A child process sets up the same fakes as the fixture, then runs BODY.
CHILD_PRELUDE = '''
import json, os, sys
from pathlib import Path
from sigform.local import _server_registry
model = Path(os.environ["FAKE_MODEL"])
_server_registry.require_local_extra = lambda: None
_server_registry.ensure_model = lambda: model
_server_registry.default_model_path = lambda: model
'''


def _child(body: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "FAKE_MODEL": str(_server_registry.default_model_path())}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(body)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw,
    )


def _wait_dead(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def _port(api_base: str) -> int:
    return int(api_base.rsplit(":", 1)[1].split("/")[0])


def test_first_use_starts_server_and_records_it(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "1")  # must not redirect the server (llama_cpp.server honours $PORT)
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("CONFIG_FILE", "/nonexistent.json")
    api_base = _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None and server.owned and server.is_healthy()
    assert api_base == server.api_base == f"http://127.0.0.1:{server.port}/v1"
    state = read_state()
    assert state == server.to_state()
    assert state is not None and state.owner_pid == os.getpid() and state.alias == "gemma-3-270m"
    assert state_path().parent == fake
    log = server.log_path.read_text()
    assert server.log_path == fake / "local-server.log"
    args = json.loads(log.split("FAKE ARGS ", 1)[1].splitlines()[0])
    assert args["chat_format"] == "gemma"
    assert args["model_alias"] == "gemma-3-270m"
    assert args["port"] == str(server.port)
    assert int(args["n_ctx"]) >= 2048
    assert args["logits_all"] == "False" and args["n_threads_batch"] == args["n_threads"]
    env = json.loads(log.split("FAKE ENV ", 1)[1].splitlines()[0])
    assert env == {"OMP_WAIT_POLICY": "PASSIVE", "SIGFORM_LOCAL_PARENT_PID": str(os.getpid())}


def test_second_call_reuses_the_server(fake: Path) -> None:
    first = _server_registry.ensure_server()
    pid = _server_registry.current_server().pid  # type: ignore[union-attr]
    assert _server_registry.ensure_server() == first
    assert _server_registry.current_server().pid == pid  # type: ignore[union-attr]
    assert len(_server_registry._owned) == 1


def test_concurrent_threads_share_one_server(fake: Path) -> None:
    results: list[str] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        results.append(_server_registry.ensure_server())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert len(_server_registry._owned) == 1


def test_other_process_reuses_and_does_not_stop_it(fake: Path) -> None:
    api_base = _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None
    child = _child('''
        base = _server_registry.ensure_server()
        s = _server_registry.current_server()
        n_owned = len(_server_registry._owned)
        print(json.dumps({"api_base": base, "pid": s.pid, "owned": s.owned, "n_owned": n_owned}))
    ''')
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    seen = json.loads(out)
    assert seen == {"api_base": api_base, "pid": server.pid, "owned": False, "n_owned": 0}
    assert server.is_healthy()  # the child's exit left our server alone
    assert read_state() == server.to_state()


def test_two_processes_starting_at_once_share_one_server(fake: Path) -> None:
    body = 'print(_server_registry.ensure_server()); sys.stdout.flush(); sys.stdin.read()'
    children = [_child(body) for _ in range(2)]
    try:
        bases = [c.stdout.readline().strip() for c in children]  # type: ignore[union-attr]
        assert bases[0] == bases[1] and bases[0].startswith("http://127.0.0.1:")
    finally:
        for c in children:
            c.communicate(input="", timeout=60)


def test_stale_state_with_dead_pid_is_replaced(fake: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    stale = ServerState(
        port=_process.free_port(), pid=proc.pid, owner_pid=proc.pid,
        model_path=str(_server_registry.default_model_path()), alias="gemma-3-270m", started_at=0.0,
        log_path="x",
    )
    write_state(stale)
    api_base = _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None and server.owned and server.pid != proc.pid
    assert read_state() == server.to_state()
    assert api_base == server.api_base


def test_live_pid_but_silent_port_is_not_reused(fake: Path) -> None:
    # pid reuse: the recorded pid now belongs to some other live process (here: us)
    silent_port = _process.free_port()
    write_state(ServerState(
        port=silent_port, pid=os.getpid(), owner_pid=os.getpid(),
        model_path=str(_server_registry.default_model_path()), alias="gemma-3-270m", started_at=0.0,
        log_path="x",
    ))
    api_base = _server_registry.ensure_server()
    assert _port(api_base) != silent_port
    assert _server_registry.current_server().owned  # type: ignore[union-attr]


def test_recorded_server_for_another_model_is_not_reused(fake: Path) -> None:
    other = _server_registry.serve(alias="gemma-3-270m")  # a live, answering server ...
    write_state(replace(other.to_state(), model_path="/elsewhere/other.gguf"))  # ... of another model
    api_base = _server_registry.ensure_server()
    assert api_base != other.api_base
    other.stop()


def test_owner_stops_server_at_exit(fake: Path) -> None:
    child = _child('''
        _server_registry.ensure_server()
        print(_server_registry.current_server().pid)
    ''')
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    server_pid = int(out)
    assert _wait_dead(server_pid)
    assert read_state() is None  # the owner removed its record


def test_server_dies_with_a_killed_owner(fake: Path) -> None:
    child = _child('''
        _server_registry.ensure_server()
        print(_server_registry.current_server().pid, flush=True)
        sys.stdin.read()
    ''')
    server_pid = int(child.stdout.readline())  # type: ignore[union-attr]
    assert pid_alive(server_pid)
    child.send_signal(signal.SIGKILL)  # no atexit: the launcher's watchdog must stop the server
    child.communicate(timeout=30)
    assert _wait_dead(server_pid)


def test_reused_server_gone_then_we_start_our_own(fake: Path, caplog: pytest.LogCaptureFixture) -> None:
    owner = _child('''
        print(_server_registry.ensure_server(), flush=True)
        sys.stdin.read()
    ''')
    theirs = owner.stdout.readline().strip()  # type: ignore[union-attr]
    assert _server_registry.ensure_server() == theirs
    adopted = _server_registry.current_server()
    assert adopted is not None and not adopted.owned
    owner.communicate(input="", timeout=60)  # the owner exits and stops its server
    assert _wait_dead(adopted.pid)
    with caplog.at_level(logging.INFO, logger="sigform.local"):
        ours = _server_registry.ensure_server()
    assert ours != theirs
    assert _server_registry.current_server().owned  # type: ignore[union-attr]
    assert "is gone" in caplog.text


def test_own_server_death_restarts_then_gives_up(
    fake: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_server_registry, "MAX_RESTARTS", 1)
    _server_registry.ensure_server()
    first = _server_registry.current_server()
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    first._process.wait()  # type: ignore[union-attr]
    with caplog.at_level(logging.WARNING, logger="sigform.local"):
        _server_registry.ensure_server()
    second = _server_registry.current_server()
    assert second is not None and second.pid != first.pid and second.is_healthy()
    assert "died" in caplog.text and "restarting" in caplog.text
    os.kill(second.pid, signal.SIGKILL)
    second._process.wait()  # type: ignore[union-attr]
    with pytest.raises(LocalModelError, match="died") as info:
        _server_registry.ensure_server()
    assert "FAKE ARGS" in str(info.value)  # quotes the server log
    with pytest.raises(LocalModelError, match="giving up"):
        _server_registry.ensure_server()  # stays given up ...
    _server_registry.stop_server()  # ... until an explicit stop renews the budget
    assert _server_registry.current_server() is None
    assert _port(_server_registry.ensure_server()) > 0
    assert _server_registry.current_server().is_healthy()  # type: ignore[union-attr]


def test_crash_at_start_quotes_the_log(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    with pytest.raises(LocalModelError) as info:
        _server_registry.ensure_server()
    message = str(info.value)
    assert "failed to start" in message and "ended during start-up (exit code 3)" in message
    assert "fake crash: bad model file" in message
    assert str(fake / "local-server.log") in message
    assert read_state() is None and _server_registry.current_server() is None


def test_start_timeout_kills_the_process(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "hang")
    with pytest.raises(LocalModelError, match=r"did not answer within 1 s") as info:
        _server_registry.ensure_server(startup_timeout=1.0)
    assert "FAKE ARGS" in str(info.value)  # the log was quoted
    assert read_state() is None and _server_registry.current_server() is None
    assert not _server_registry._owned  # the hung process was killed, not kept for later


def test_taken_port_is_retried(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    ports = iter([taken])
    real_free_port = _process.free_port
    monkeypatch.setattr(
        _process, "free_port", lambda host="127.0.0.1": next(ports, None) or real_free_port(host)
    )
    try:
        api_base = _server_registry.ensure_server()
    finally:
        blocker.close()
    assert _port(api_base) != taken


def test_serve_is_explicit_and_unshared(fake: Path, tmp_path: Path) -> None:
    log = tmp_path / "mine.log"
    with _server_registry.serve(log_path=log, n_ctx=1024) as server:
        assert server.owned and server.is_healthy()
        assert server.log_path == log and "FAKE ARGS" in log.read_text()
        assert read_state() is None  # not offered to other processes
        assert _server_registry.current_server() is None
        pid = server.pid
    assert not server.is_alive()
    assert _wait_dead(pid)


def test_serve_missing_model_file(fake: Path, tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="model file not found"):
        _server_registry.serve(model_path=tmp_path / "nope.gguf")


def test_stop_server_stops_own_and_clears_state(fake: Path) -> None:
    _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None
    _server_registry.stop_server()
    assert _wait_dead(server.pid)
    assert read_state() is None and _server_registry.current_server() is None
    _server_registry.stop_server()  # nothing running: no error


def test_stop_server_only_detaches_from_a_foreign_server(fake: Path) -> None:
    owner = _child('''
        print(_server_registry.ensure_server(), flush=True)
        sys.stdin.read()
    ''')
    try:
        theirs = owner.stdout.readline().strip()  # type: ignore[union-attr]
        assert _server_registry.ensure_server() == theirs
        adopted = _server_registry.current_server()
        assert adopted is not None
        _server_registry.stop_server()
        assert pid_alive(adopted.pid) and _server_registry.current_server() is None
        assert read_state() is not None
    finally:
        owner.communicate(input="", timeout=60)


# -- a squatter on the server's port (issue 27, finding 6) --------------------------------------

SQUATTER = """
import http.server, json, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("GET " + self.path, flush=True)
        body = json.dumps({"object": "list", "data": [{"id": "gemma-3-270m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        print("POST " + self.path, flush=True)  # a prompt: what the squatter is after
        self.send_response(500)
        self.end_headers()
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_a_squatter_answering_on_the_servers_port_is_refused(fake: Path, tmp_path: Path) -> None:
    # the port is on the child's command line; a process that bound it first and answered
    # /v1/models with the alias was taken for sigform's server and got the prompts
    squatter = subprocess.Popen([sys.executable, "-c", SQUATTER], stdout=subprocess.PIPE, text=True)
    try:
        assert squatter.stdout is not None
        port = int(squatter.stdout.readline())
        with pytest.raises(LocalModelError) as info:
            _process.start_server(
                model_path=_server_registry.default_model_path(), log_path=None, log_dir=tmp_path,
                port=port, startup_timeout=30,
            )
    finally:
        squatter.kill()
        out, _ = squatter.communicate()
    message = str(info.value)
    assert f"another process answered on port {port} in the server's place" in message
    assert f"does not hold the socket listening on port {port}" in message
    assert "POST" not in out  # nothing but the health probe reached it
