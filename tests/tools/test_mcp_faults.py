"""MCP servers that misbehave, and the lifetimes of server processes: none outlives its owner.

Every test checks by pid that the server process (and on Linux its supervisor) is gone: at the end
of the ``with`` block, after garbage collection, at interpreter exit, after a crash, a hang or a
failed start, and that a forked child neither ends nor uses its parent's server.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM

SERVER = str(Path(__file__).with_name("mcp_server.py"))
# the subprocesses import this checkout's sigform
CHECKOUT_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
GONE_WITHIN = 15.0  # seconds; generous for a loaded machine, only pathological slowness fails


def stdio(kind: str, **options: object) -> sf.MCPClient:
    return sf.MCPClient.stdio(sys.executable, [SERVER, kind], name=kind, **options)  # type: ignore[arg-type]


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in (b"Z", b"X")


def assert_gone(*pids: int) -> None:
    deadline = time.monotonic() + GONE_WITHIN
    while any(running(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if running(p)]}"
        time.sleep(0.05)


def server_pids(client: sf.MCPClient) -> tuple[int, int]:
    """(the server's own pid, the pid sigform started: its supervisor on Linux)"""
    tools = {t.name: t for t in client.tools()}
    own = tools["pid"].run({}).value["result"]
    assert running(own) and client.pid is not None
    return own, client.pid


def test_the_server_ends_with_its_context():
    with stdio("math") as client:
        pids = server_pids(client)
    assert_gone(*pids)


def test_the_server_ends_when_its_client_is_garbage_collected():
    client = stdio("math")
    pids = server_pids(client)
    del client
    gc.collect()
    assert_gone(*pids)


def test_the_server_ends_at_interpreter_exit_even_mid_call():
    script = textwrap.dedent(f"""
        import sys, threading, sigform as sf
        client = sf.MCPClient.stdio(sys.executable, [{SERVER!r}, "math"], name="math")
        tools = {{t.name: t for t in client.tools()}}
        print(tools["pid"].run({{}}).value["result"], client.pid, flush=True)
        threading.Thread(target=lambda: tools["hang"].run({{}}), daemon=True).start()
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=CHECKOUT_ENV
    )
    assert proc.returncode == 0, proc.stderr
    assert_gone(*map(int, proc.stdout.split()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the supervisor is Linux's")
def test_the_server_ends_when_its_owner_is_killed():
    # a server that ignores the end of its stdin outlived a SIGKILLed owner (and its supervisor
    # with it): now the supervisor gets SIGTERM when its parent dies and ends everything
    script = textwrap.dedent(f"""
        import sys, time, sigform as sf
        client = sf.MCPClient.stdio(sys.executable, [{SERVER!r}, "stubborn"], name="stubborn")
        tools = {{t.name: t for t in client.tools()}}
        print(tools["pid"].run({{}}).value["result"], client.pid, flush=True)
        time.sleep(3600)
    """)
    owner = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=CHECKOUT_ENV
    )
    try:
        assert owner.stdout is not None
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(map(running, pids))
    finally:
        owner.kill()
        owner.wait()
    assert_gone(*pids)


def test_a_forked_child_neither_uses_nor_ends_its_parents_server():
    script = textwrap.dedent(f"""
        import os, sys, time, sigform as sf
        client = sf.MCPClient.stdio(sys.executable, [{SERVER!r}, "math"], name="math")
        tools = {{t.name: t for t in client.tools()}}
        own = tools["pid"].run({{}}).value["result"]
        child = os.fork()
        if child == 0:
            started = time.monotonic()
            result = tools["add"].run({{"a": 1, "b": 2}})
            print("child", result.status, round(time.monotonic() - started), result.message, flush=True)
            # its copy of the pipe to the server's stdin points at /dev/null: the server sees EOF
            # when the parent closes its end, whatever the child does
            print("inherited", os.readlink(f"/proc/self/fd/{{client._conn.stdio.stdin_fd}}"), flush=True)
            del client, tools
            time.sleep(30)  # still alive (holding what it inherited) while the parent closes
            os._exit(0)
        time.sleep(1)
        print("parent", tools["add"].run({{"a": 1, "b": 2}}).value["result"], flush=True)
        client.close()
        print("closed", own, client.pid, flush=True)
        os.kill(child, 9)
        os.waitpid(child, 0)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=CHECKOUT_ENV
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    status, seconds, message = lines["child"].split(" ", 2)
    assert status == "error" and seconds == "0"
    assert "forked child" in message and "MCP server `math`" in message
    assert lines["parent"] == "3"
    assert lines["inherited"] == "/dev/null"
    assert_gone(*map(int, lines["closed"].split()))


def test_a_server_that_crashes_mid_call_is_an_error_the_agent_goes_on_after():
    lm = ScriptedLM(
        [
            Completion(text="", tool_calls=(ToolCall("crash", {}, "c1"),)),
            Completion(
                text="",
                tool_calls=(
                    ToolCall("add", {"a": 1, "b": 2}, "c2"),
                    ToolCall("add_note", {"text": "x"}, "c3"),
                ),
            ),
            Completion(text="", tool_calls=(ToolCall("finish", {"answer": "done"}, "c4"),)),
        ],
        features={"tools", "stop", "json_object"},
    )
    with stdio("math") as math, stdio("notes") as notes:
        pids = server_pids(math)
        agent = sf.Agent("q -> answer", tools=[*math.tools(), *notes.tools()], lm=lm)
        pred = agent(q="crash it")
        assert pred.trajectory.status == "completed"
        crash, add, note = pred.trajectory.calls[:3]
        assert crash.result.status == "error"
        assert "MCP server `math`" in crash.result.message and "exited with code 3" in crash.result.message
        assert "fatal: the disk is on fire" in crash.result.message
        assert add.result.status == "error" and "exited with code 3" in add.result.message
        assert note.result.ok
        assert_gone(*pids)


def test_a_hanging_call_times_out_and_the_server_still_answers_then_ends():
    with stdio("math", timeout=2) as client:
        pids = server_pids(client)
        tools = {t.name: t for t in client.tools()}
        result = tools["hang"].run({})
        assert result.status == "error"
        assert "MCP server `math`" in result.message and "no answer within 2s" in result.message
        assert tools["add"].run({"a": 1, "b": 1}).value == {"result": 2}
    assert_gone(*pids)


async def test_a_cancelled_call_leaves_the_server_usable():
    async with stdio("math") as client:
        tools = {t.name: t for t in await client.atools()}
        task = asyncio.ensure_future(tools["hang"].arun({}))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await tools["add"].arun({"a": 2, "b": 2})).value == {"result": 4}
        pid = client.pid
    assert pid is not None
    assert_gone(pid)


def test_a_server_that_never_starts_is_an_error_and_is_ended():
    client = stdio("hang_start", startup_timeout=2)
    with pytest.raises(
        sf.MCPServerError, match=r"MCP server `hang_start` .* did not finish starting within 2s"
    ):
        client.start()
    assert client.pid is not None
    assert_gone(client.pid)


def test_a_server_that_exits_at_start_shows_its_exit_code_and_stderr():
    code = "import sys; sys.stderr.write('bad config: no token\\n'); sys.exit(2)"
    client = sf.MCPClient.stdio(sys.executable, ["-c", code], name="broken")
    with pytest.raises(sf.MCPServerError) as info:
        client.tools()
    text = str(info.value)
    assert "MCP server `broken`" in text and "exited with code 2" in text and "bad config: no token" in text


def test_a_missing_command_is_a_clear_error():
    client = sf.MCPClient.stdio("no-such-mcp-server-here", name="ghost")
    with pytest.raises(sf.MCPServerError, match=r"MCP server `ghost`.*could not be started.*No such file"):
        client.start()


@pytest.mark.parametrize("how", ["deep", "deeper"])
def test_an_answer_too_deep_to_read_is_an_error_at_once_not_at_the_timeout(how: str) -> None:
    # the answer was dropped as unreadable and the call waited for its whole timeout (20 s)
    with sf.MCPClient.stdio(sys.executable, [SERVER, "malformed"], name="bad", timeout=120) as client:
        [broken] = client.tools()
        result = broken.run({"how": how})
        assert result.status == "error" and "MCP server `bad`" in result.message
        assert "its answer could not be read" in result.message and "recursion" in result.message
        assert "no answer within" not in result.message
        assert broken.run({"how": "shape"}).status == "error"  # the connection still answers


def test_malformed_results_are_errors_the_model_reads():
    with sf.MCPClient.stdio(sys.executable, [SERVER, "malformed"], name="bad", timeout=3) as client:
        [broken] = client.tools()
        wrong_shape = broken.run({"how": "shape"})
        assert wrong_shape.status == "error" and "MCP server `bad`" in wrong_shape.message
        garbage = broken.run({"how": "garbage"})
        assert garbage.status == "error"
        assert "no answer within 3s" in garbage.message and "could not be read" in garbage.message
        pid = client.pid
    assert pid is not None
    assert_gone(pid)
