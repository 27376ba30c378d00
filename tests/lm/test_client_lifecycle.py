"""SDK clients of the fast path: replaced when the key rotates, closed when replaced (never
under a request in flight) or at interpreter exit, and bounded under per-call keys."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lm_fake_openai import FakeOpenAIServer

from sigform.lm import LM

# every test here gets its own cache directory (a cached answer would hide the request)
pytestmark = pytest.mark.usefixtures("isolated_cache")


MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
def made_clients(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[object]]:
    """Every openai client the fast path makes from now on, sync and async."""
    import openai

    made: dict[str, list[object]] = {"sync": [], "async": []}

    class SyncSpy(openai.OpenAI):
        def __init__(self, *a: object, **kw: object) -> None:
            super().__init__(*a, **kw)
            made["sync"].append(self)

    class AsyncSpy(openai.AsyncOpenAI):
        def __init__(self, *a: object, **kw: object) -> None:
            super().__init__(*a, **kw)
            made["async"].append(self)

    monkeypatch.setattr(openai, "OpenAI", SyncSpy)
    monkeypatch.setattr(openai, "AsyncOpenAI", AsyncSpy)
    return made


def _rotating(prefix: str) -> object:
    count = iter(range(1000))
    return lambda: f"{prefix}-{next(count)}"


def test_a_rotating_key_replaces_its_client_and_closes_the_old_one(
    lm_server: FakeOpenAIServer, made_clients: dict[str, list[object]]
) -> None:
    # one client was cached per (endpoint, key) and never closed: every rotation leaked one
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=_rotating("sk-rot"), fast_path=True)
    for _ in range(3):
        lm(MSG, cache=False)
    assert [h["authorization"] for h in lm_server.headers] == [f"Bearer sk-rot-{i}" for i in range(3)]
    clients = made_clients["sync"]
    assert len(clients) == 3
    assert [c.is_closed() for c in clients] == [True, True, False]
    # the same key again: the latest client is reused, nothing new is made
    lm2 = LM("openai/fake", api_base=lm_server.api_base, api_key="sk-fixed", fast_path=True)
    lm2(MSG, cache=False)
    lm2(MSG, cache=False)
    assert len(clients) == 4 and not clients[2].is_closed() and not clients[3].is_closed()


def test_a_replaced_client_is_not_closed_while_a_request_is_in_flight(
    lm_server: FakeOpenAIServer, made_clients: dict[str, list[object]]
) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=_rotating("sk-live"), fast_path=True)
    stream = lm.stream(MSG, cache=False)
    first = next(stream)  # the stream's client is leased until the stream ends
    assert first is not None
    lm(MSG, cache=False)  # a rotated key: a new client replaces the streaming one
    old, new = made_clients["sync"]
    assert not old.is_closed()
    rest = list(stream)
    assert rest and rest[-1][0].text == "echo: hi"
    assert old.is_closed() and not new.is_closed()


def test_async_clients_rotate_and_close_within_one_loop(
    lm_server: FakeOpenAIServer, made_clients: dict[str, list[object]]
) -> None:
    import asyncio

    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=_rotating("sk-aio"), fast_path=True)

    async def main() -> list[bool]:
        for _ in range(3):
            await lm.acall(MSG, cache=False)
        return [c.is_closed() for c in made_clients["async"]]

    assert asyncio.run(main()) == [True, True, False]
    assert all(c.is_closed() for c in made_clients["async"])  # the loop closed the last one


def test_per_call_keys_keep_a_bounded_number_of_clients(
    lm_server: FakeOpenAIServer, made_clients: dict[str, list[object]]
) -> None:
    from sigform.lm.openai_backend import MAX_CLIENTS

    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True)
    for i in range(MAX_CLIENTS + 5):
        lm(MSG, api_key=f"sk-tenant-{i}", cache=False)
    open_clients = [c for c in made_clients["sync"] if not c.is_closed()]
    assert len(made_clients["sync"]) == MAX_CLIENTS + 5
    assert len(open_clients) == MAX_CLIENTS
    assert made_clients["sync"][-1] in open_clients and made_clients["sync"][0] not in open_clients


def test_sync_clients_are_closed_at_interpreter_exit(lm_server: FakeOpenAIServer) -> None:
    import subprocess

    code = f"""
import atexit, openai
made = []
class Spy(openai.OpenAI):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        made.append(self)
openai.OpenAI = Spy
# registered first, so it runs after sigform's own exit handler
atexit.register(lambda: print("closed:", [c.is_closed() for c in made]))
from sigform.lm import LM
LM("openai/fake", api_base={lm_server.api_base!r}, api_key="sk-x", fast_path=True)(
    [{{"role": "user", "content": "hi"}}], cache=False)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 0, out.stderr
    assert "closed: [True]" in out.stdout
