"""Sync agent calls run on one background event loop: reused clients, no deadlock from the
loop's own thread or a tool thread, settings carried, SystemExit handed back, clients closed at exit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sigform as sf
from sigform.testing import ScriptedLM


def _say_finish(answer: str) -> str:
    import json

    return json.dumps({"thought": "done", "tool_calls": [{"name": "finish", "args": {"answer": answer}}]})


def test_sync_agent_calls_reuse_one_loop_and_its_async_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    # every call started a new event loop, so the LM's per-loop async clients were rebuilt each time
    from lm_fake_openai import FakeOpenAIServer, Reply, completion_body

    from sigform.lm import transport

    made: list[object] = []
    real = transport._new_session

    def spy() -> object:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(transport, "_new_session", spy)

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with FakeOpenAIServer() as server:
        server.reply = lambda body, headers: Reply(body=completion_body([_say_finish("4")]))
        lm = sf.LM("openai/fake", api_base=server.api_base, fast_path=True, cache=False)
        agent = sf.Agent("question -> answer: int", tools=[add], lm=lm)
        assert [agent(question="2+2?").answer for _ in range(3)] == [4, 4, 4]
        assert len(server.requests) == 3
    # one session for the three calls (none when an earlier test left one on the loop)
    assert len(made) <= 1 and not any(session.closed for session in made)  # type: ignore[attr-defined]


def test_sync_agent_calls_run_on_one_loop_even_inside_a_running_loop() -> None:
    import asyncio

    loops: list[object] = []

    def answer(messages: object, kwargs: object) -> str:
        loops.append(asyncio.get_running_loop())
        return _say_finish("4")

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = sf.Agent("question -> answer: int", tools=[add], lm=ScriptedLM(answer))
    assert agent(question="2+2?").answer == 4

    async def inside_a_loop() -> int:
        return agent(question="2+2?").answer  # a sync call from async code (a notebook cell)

    assert asyncio.run(inside_a_loop()) == 4
    assert agent(question="2+2?").answer == 4
    assert len(loops) == 3 and loops[0] is loops[1] is loops[2] and not loops[0].is_closed()


def test_run_sync_from_the_loop_thread_or_a_tool_thread_does_not_deadlock() -> None:
    import asyncio
    import threading

    from sigform.tools._invoke import invoke, run_sync

    async def value() -> int:
        return 7

    async def on_the_loop() -> int:
        return run_sync(value) + 1  # blocking call on the loop thread itself

    def in_a_worker() -> int:
        return run_sync(value) + 2

    async def from_worker_threads() -> list[int]:
        # more nested sync runs than the default executor has threads
        return list(await asyncio.gather(*(invoke(in_a_worker) for _ in range(12))))

    box: dict[str, object] = {}

    def main() -> None:
        box["loop"] = run_sync(on_the_loop)
        box["workers"] = run_sync(from_worker_threads)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    thread.join(120)  # a hang guard: a deadlock would otherwise block the test run forever
    assert not thread.is_alive(), "run_sync deadlocked"
    assert box == {"loop": 8, "workers": [9] * 12}


def test_run_sync_carries_settings_and_cancels_nothing_on_success() -> None:
    from sigform.settings import get_setting
    from sigform.tools._invoke import run_sync

    async def read() -> object:
        return get_setting("parallel_tools")

    with sf.context(parallel_tools=True):
        assert run_sync(read) is True
    assert run_sync(read) is None


def test_run_sync_hands_back_a_system_exit_and_the_loop_keeps_serving() -> None:
    from sigform.tools._invoke import run_sync

    async def leave() -> None:
        raise SystemExit(3)

    async def value() -> int:
        return 5

    with pytest.raises(SystemExit):
        run_sync(leave)
    assert run_sync(value) == 5


def test_the_background_loop_closes_its_async_clients_at_exit() -> None:
    import subprocess

    tests = Path(__file__).parents[1]
    code = f"""
import atexit, json, sys
sys.path.insert(0, {str(tests)!r})
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body
made = []
# registered first, so it runs after sigform's own exit handlers
atexit.register(lambda: print("closed:", [c.closed for c in made]))
import sigform as sf
from sigform.lm import transport
real = transport._new_session
transport._new_session = lambda: made.append(real()) or made[-1]
server = FakeOpenAIServer().start()
say = json.dumps({{"thought": "", "tool_calls": [{{"name": "finish", "args": {{"answer": "4"}}}}]}})
server.reply = lambda body, headers: Reply(body=completion_body([say]))
def add(a: int, b: int) -> int:
    "Add."
    return a + b
lm = sf.LM("openai/fake", api_base=server.api_base, fast_path=True, cache=False)
agent = sf.Agent("question -> answer: int", tools=[add], lm=lm)
print("answers:", agent(question="x").answer, agent(question="y").answer)
"""
    out = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tests.parent,
    )
    assert out.returncode == 0, out.stderr
    assert "answers: 4 4" in out.stdout and "closed: [True]" in out.stdout
    assert "Unclosed" not in out.stderr
