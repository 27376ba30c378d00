"""Issue 13 item 9: ``local-server.json`` is untrusted; a forged record must not be adopted.

A record naming a live pid and a port that answers ``/v1/models`` with our alias was enough: the
prompts then went to whatever listened there. Now the recorded pid must be sigform's launcher for
the recorded model, run by our user, and hold the listening socket of the recorded port.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sigform.local import _server_registry
from sigform.local._ownership import ownership_problem
from sigform.local._process import probe
from sigform.local._state import ServerState, read_state, state_path, write_state

ALIAS = "gemma-3-270m"
LINUX_PROC = Path("/proc/net/tcp").exists()


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Another program's server that happens to answer like ours (and would read our prompts)."""

    posts: int = 0

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": ALIAS}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def impostor_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _forge(pid: int, port: int) -> None:
    write_state(ServerState(
        port=port, pid=pid, owner_pid=pid, model_path=str(_server_registry.default_model_path()), alias=ALIAS,
        started_at=0.0, log_path="/tmp/forged.log",
    ))


def _assert_not_adopted(port: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sigform.local"):
        api_base = _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None and server.owned  # we started our own instead
    assert f":{port}/" not in api_base
    assert read_state() == server.to_state()  # and the forged record is replaced
    assert "not using the local server recorded in" in caplog.text


@pytest.mark.parametrize("who", ["pid 1", "a live pid that holds the port but is not our server"])
def test_a_forged_record_pointing_at_another_programs_port_is_refused(
    fake: Path, impostor_port: int, caplog: pytest.LogCaptureFixture, who: str
) -> None:
    assert probe("127.0.0.1", impostor_port, ALIAS)  # it answers exactly like our server would
    _forge(1 if who == "pid 1" else os.getpid(), impostor_port)  # this test process holds the port
    _assert_not_adopted(impostor_port, caplog)


def test_a_record_pairing_our_real_server_with_another_port_is_refused(
    fake: Path, impostor_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with _server_registry.serve() as ours:  # a genuine sigform server: right launcher, right model ...
        _forge(ours.pid, impostor_port)  # ... but the port is someone else's
        _assert_not_adopted(impostor_port, caplog)
        assert "does not hold the socket listening on port" in caplog.text


class _V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="needs an IPv6 loopback")
def test_a_record_pairing_our_real_server_with_an_impostor_on_its_port_over_ipv6_is_refused(
    fake: Path,
) -> None:
    # our server listens on 127.0.0.1:P; another program (any user) may listen on [::1]:P, the
    # same port number: a record naming host "::1" sent our prompts to it
    with _server_registry.serve() as ours:
        impostor = _V6Server(("::1", ours.port), _Impostor)
        thread = threading.Thread(target=impostor.serve_forever, daemon=True)
        thread.start()
        try:
            assert probe("::1", ours.port, ALIAS)
            write_state(replace(ours.to_state(), host="::1"))
            assert read_state() is None  # only 127.0.0.1, the address the shared server binds
            api_base = _server_registry.ensure_server()
            server = _server_registry.current_server()
            assert server is not None and server.owned and api_base.startswith("http://127.0.0.1:")
        finally:
            impostor.shutdown()
            impostor.server_close()


@pytest.mark.skipif(not LINUX_PROC, reason="socket ownership is read from /proc (Linux)")
def test_a_genuine_record_is_still_adopted(fake: Path) -> None:
    with _server_registry.serve() as ours:
        write_state(ours.to_state())
        assert _server_registry.ensure_server() == ours.api_base
        adopted = _server_registry.current_server()
        assert adopted is not None and not adopted.owned and adopted.pid == ours.pid


@pytest.mark.skipif(not LINUX_PROC, reason="socket ownership is read from /proc (Linux)")
def test_an_adopted_server_s_log_is_never_a_path_from_the_file(fake: Path, tmp_path: Path) -> None:
    # log_tail() of an adopted server read whatever file the record named (a secret, say)
    secret = tmp_path / "secret.txt"
    secret.write_text("sk-do-not-read\n")
    with _server_registry.serve() as ours:
        write_state(replace(ours.to_state(), log_path=str(secret)))
        assert _server_registry.ensure_server() == ours.api_base
        adopted = _server_registry.current_server()
        assert adopted is not None and not adopted.owned
        assert adopted.log_path == state_path().parent / _server_registry.SHARED_LOG
        assert "sk-do-not-read" not in adopted.log_tail()


# -- the check itself, on a synthetic /proc ---------------------------------------------------

def _proc(tmp_path: Path, *, port: int, inode: str, held: str, argv: list[str]) -> Path:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    header = "  sl  local_address rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode\n"
    row = (f"   0: 0100007F:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000"
           f"     0        0 {inode}\n")
    (proc / "net" / "tcp").write_text(header + row)
    (proc / "net" / "tcp6").write_text(header)
    fd = proc / "42" / "fd"
    fd.mkdir(parents=True)
    os.symlink(f"socket:[{held}]", fd / "3")
    os.symlink("/dev/null", fd / "0")
    (proc / "42" / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
    return proc


LAUNCHER_ARGV = ["python", "/x/sigform/local/_launcher.py", "--model", "/m.gguf", "--port", "8123"]


def test_the_check_matches_pid_socket_and_launcher(tmp_path: Path) -> None:
    good = _proc(tmp_path / "a", port=8123, inode="777", held="777", argv=LAUNCHER_ARGV)
    assert ownership_problem(42, 8123, "/m.gguf", proc=good) is None
    assert "nothing listens on port 8124" in str(ownership_problem(42, 8124, "/m.gguf", proc=good))
    assert "not sigform's local server" in str(ownership_problem(42, 8123, "/other.gguf", proc=good))
    assert "does not exist" in str(ownership_problem(43, 8123, "/m.gguf", proc=good))
    other_socket = _proc(tmp_path / "b", port=8123, inode="777", held="778", argv=LAUNCHER_ARGV)
    assert "does not hold the socket" in str(ownership_problem(42, 8123, "/m.gguf", proc=other_socket))
    not_ours = _proc(tmp_path / "c", port=8123, inode="777", held="777",
                     argv=["python", "-m", "http.server", "--model", "/m.gguf"])
    assert "not sigform's local server" in str(ownership_problem(42, 8123, "/m.gguf", proc=not_ours))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_process_of_another_user_is_refused(tmp_path: Path) -> None:
    proc = _proc(tmp_path, port=8123, inode="777", held="777", argv=LAUNCHER_ARGV)
    os.chown(proc / "42", 12345, 12345)
    assert "belongs to another user (uid 12345)" in str(ownership_problem(42, 8123, "/m.gguf", proc=proc))


def test_without_proc_nothing_is_adopted(tmp_path: Path) -> None:
    # macOS, Windows: no way to tell who listens on a port, so each process starts its own server
    assert "no way to check" in str(ownership_problem(os.getpid(), 8123, "/m.gguf", proc=tmp_path))
