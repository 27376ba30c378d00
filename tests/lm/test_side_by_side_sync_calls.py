"""Sync fast-path requests sent side by side go over the process's I/O loop (sigform.runtime):
the same requests, answers and errors as the sync route, credentials resolved in the caller's
thread, a lone call still sent the sync way, a clean exit and a working forked child; work on the
loop runs in the caller's context and is cancelled when the caller's wait is interrupted."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body, default_reply

import sigform as sf
from sigform.lm import LM

MSG = [{"role": "user", "content": "hi"}]
VOLATILE = {"content-length", "accept-encoding", "connection", "host"}  # the HTTP libraries' own
THREADS = 6


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def slow(server: FakeOpenAIServer, delay: float = 0.3) -> None:
    """Every answer takes ``delay`` seconds, so that the threads' requests overlap."""
    def reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        answer = default_reply(body, headers)
        answer.delay = delay
        return answer

    server.reply = reply


def count_sync_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from sigform.lm.http11 import Connections

    threads: list[str] = []
    original = Connections.post

    def post(self: Any, *args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(self, *args, **kw)

    monkeypatch.setattr(Connections, "post", post)
    return threads


def side_by_side(lm: LM, calls: int = THREADS, **kw: Any) -> list[Any]:
    """``calls`` sync calls from as many threads at once; each one's texts or its error."""
    def one(_: int) -> Any:
        try:
            return [c.text for c in lm(MSG, **kw)]
        except sf.LMError as err:
            return type(err).__name__, str(err)

    with ThreadPoolExecutor(calls) as pool:
        return list(pool.map(one, range(calls)))


def test_side_by_side_sync_calls_go_over_the_io_loop(
    lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent_sync = count_sync_sends(monkeypatch)
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="sk-test-key-0123456789", cache=False,
            headers={"X-Team": "a"})
    assert lm(MSG)[0].text == "echo: hi"  # a lone call: the sync way
    assert len(sent_sync) == 1
    slow(lm_server)
    assert side_by_side(lm, temperature=0.5) == [["echo: hi"]] * THREADS
    assert len(sent_sync) <= 2  # the first of the crowd may still go alone; the others do not
    first_body, first_headers = lm_server.requests[0], lm_server.headers[0]
    for body, headers in zip(lm_server.requests[1:], lm_server.headers[1:], strict=True):
        assert body == {**first_body, "temperature": 0.5}
        assert {k: v for k, v in headers.items() if k not in VOLATILE} == {
            k: v for k, v in first_headers.items() if k not in VOLATILE
        }


def test_credentials_are_resolved_in_the_callers_thread(lm_server: FakeOpenAIServer) -> None:
    seen: list[str] = []

    def api_key() -> str:
        seen.append(threading.current_thread().name)
        return "sk-rotating-0123456789"

    slow(lm_server)
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=api_key, cache=False)
    assert side_by_side(lm) == [["echo: hi"]] * THREADS
    assert seen and "sigform-loop" not in seen
    assert {h["authorization"] for h in lm_server.headers} == {"Bearer sk-rotating-0123456789"}


@pytest.mark.parametrize("status", [401, 429, 500])
def test_errors_are_those_of_the_sync_route(status: int, lm_server: FakeOpenAIServer) -> None:
    def reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return Reply(status=status, body={"error": {"message": f"status {status} here"}}, delay=0.2)

    lm_server.reply = reply
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="k", cache=False, num_retries=0)
    alone = side_by_side(lm, calls=1)
    crowd = side_by_side(lm)
    assert crowd == alone * THREADS
    assert alone[0][0] != "ok" and f"status {status} here" in alone[0][1]


def test_a_malformed_answer_is_reported_alike(lm_server: FakeOpenAIServer) -> None:
    lm_server.reply = lambda body, headers: Reply(raw=b"<html>gateway</html>", delay=0.2)
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="k", cache=False, num_retries=0)
    alone = side_by_side(lm, calls=1)
    assert side_by_side(lm) == alone * THREADS
    assert alone[0][0] == "ProviderError"


def test_the_process_exits_cleanly_after_side_by_side_calls(lm_server: FakeOpenAIServer) -> None:
    code = (
        "import sys, threading\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "import sigform as sf\n"
        f"lm = sf.LM('openai/fake', api_base={lm_server.api_base!r}, api_key='k', cache=False)\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    texts = list(pool.map(lambda i: lm('hi')[0].text, range(16)))\n"
        "assert texts == ['echo: hi'] * 16, texts\n"
        "assert any(t.name == 'sigform-loop' for t in threading.enumerate())\n"
        "print('done')\n"
    )
    slow(lm_server, 0.1)
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "nclosed" not in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_loop(lm_server: FakeOpenAIServer) -> None:
    slow(lm_server, 0.1)
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="k", cache=False)
    assert side_by_side(lm) == [["echo: hi"]] * THREADS  # the parent's loop is running
    pid = os.fork()
    if pid == 0:  # the child: its side-by-side calls need a loop of its own
        code = 1
        try:
            code = 0 if side_by_side(lm) == [["echo: hi"]] * THREADS else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_slow_answer_times_out_alike(lm_server: FakeOpenAIServer) -> None:
    lm_server.reply = lambda body, headers: Reply(body=completion_body(["late"]), delay=0.8)
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key="k", cache=False, num_retries=0, timeout=0.3)
    alone = side_by_side(lm, calls=1)
    assert side_by_side(lm) == alone * THREADS
    assert alone[0][0] == "LMTimeoutError"
