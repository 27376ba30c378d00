"""Tools from an MCP server over streamable HTTP on loopback, with a bearer token handled like
every sigform credential: it reaches the server and nothing else (reprs, logs, history, errors)."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.tools import ScriptedApprover

SERVER = str(Path(__file__).with_name("mcp_server.py"))
TOKEN = "s3cret-mcp-token-0123456789"


def start_server(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MCP_TEST_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, SERVER, kind, "--http", str(port)], env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def math_url() -> Iterator[str]:
    proc, url = start_server("math")
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SF_TEST_MCP_AUTH", f"Bearer {TOKEN}")
    return "env:SF_TEST_MCP_AUTH"


def test_an_agent_uses_an_http_server_and_the_token_stays_secret(math_url, token_env, caplog):
    caplog.set_level(logging.DEBUG)
    lm = ScriptedLM(
        [
            Completion(text="", tool_calls=(ToolCall("add", {"a": 40, "b": 2}, "c1"),)),
            Completion(text="", tool_calls=(ToolCall("finish", {"answer": "42"}, "c2"),)),
        ],
        features={"tools", "stop", "json_object"},
    )
    approver = ScriptedApprover(["approve"])
    with sf.MCPClient.http(
        math_url, headers={"Authorization": token_env}, name="calc", requires_approval=True
    ) as calc:
        agent = sf.Agent("q -> answer", tools=calc.tools(), lm=lm, approver=approver)
        pred = agent(q="40 + 2?")
        shown = [repr(calc), *map(repr, calc.tools()), approver.requests[0].description]
    assert pred.answer == "42" and pred.trajectory.calls[0].result.value == {"result": 42}
    assert approver.requests[0].description.startswith(f"MCP server `calc` ({math_url}) wants to run `add`")
    everything = "\n".join([*shown, repr(pred._meta.messages), repr(pred.trajectory), caplog.text])
    assert TOKEN not in everything


def test_a_rejected_token_is_an_error_that_does_not_show_it(math_url, monkeypatch):
    monkeypatch.setenv("SF_TEST_MCP_AUTH", "Bearer wrong-token-9876543210")
    client = sf.MCPClient.http(math_url, headers={"Authorization": "env:SF_TEST_MCP_AUTH"}, name="calc")
    with pytest.raises(sf.MCPServerError, match=r"MCP server `calc`.*could not be started") as info:
        client.start()
    assert "wrong-token" not in str(info.value) and "9876543210" not in repr(client)


def test_a_callable_header_is_asked_on_every_request(math_url):
    asked: list[int] = []

    def bearer() -> str:
        asked.append(1)
        return f"Bearer {TOKEN}"

    with sf.MCPClient.http(math_url, headers={"Authorization": bearer}) as client:
        add = {t.name: t for t in client.tools()}["add"]
        before = len(asked)
        assert add.run({"a": 1, "b": 1}).ok
        assert len(asked) > before


def test_credentials_in_the_url_are_refused():
    with pytest.raises(sf.ToolError, match="carries credentials; pass them as headers") as info:
        sf.MCPClient.http(f"http://127.0.0.1:1/mcp?token={TOKEN}")
    assert TOKEN not in str(info.value)


def test_a_server_that_goes_away_is_an_error_naming_it(token_env):
    proc, url = start_server("math")
    try:
        with sf.MCPClient.http(url, headers={"Authorization": token_env}, name="flaky", timeout=20) as client:
            add = {t.name: t for t in client.tools()}["add"]
            assert add.run({"a": 1, "b": 2}).ok
            proc.kill()
            proc.wait(10)
            result = add.run({"a": 1, "b": 2})
            assert result.status == "error" and "MCP server `flaky`" in result.message
    finally:
        proc.kill()
        proc.wait(10)
