"""Review findings in the LM layer: secrets that reached errors, history or request bodies."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform.lm import LM, global_history

pytest_plugins = ["lm_fake_openai"]  # fixtures: lm_server, fast_path, isolated_cache

SECRET = "sk-review-secret-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def _echo_key_error(server: FakeOpenAIServer) -> None:
    server.queue.append(server.error(401, f"Incorrect API key provided: {SECRET}.", code="invalid_api_key"))


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(lambda: SECRET, id="callable"),
        pytest.param("cmd:" + shlex.join([sys.executable, "-c", f"print({SECRET!r})"]), id="cmd-first-call"),
    ],
)
def test_a_key_the_provider_echoes_is_scrubbed_whatever_its_form(
    lm_server: FakeOpenAIServer, fast_path: bool, form: object
) -> None:
    # the key of a callable (resolved per call) or a command (resolved on the first call) was not
    # known when the error was scrubbed, so the provider's echo of it reached the error message
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=form, fast_path=fast_path, num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        lm(MSG, cache=False)
    err = info.value
    shown = f"{err}\n{err.provider_message}\n{err!r}\n{lm.history[-1].error}"
    assert "Incorrect API key provided" in shown
    assert SECRET not in shown and SECRET[:8] not in shown


def test_a_streamed_call_scrubs_a_callable_key(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=lambda: SECRET, fast_path=fast_path,
            num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        list(lm.stream(MSG, cache=False))
    assert SECRET not in str(info.value)


def test_a_per_call_api_key_is_a_credential_not_a_request_parameter(
    lm_server: FakeOpenAIServer, fast_path: bool
) -> None:
    # it was sent in the request body (fast path) and recorded in history and hook events
    seen: list[str] = []

    class Spy(sf.Callback):
        def on_request(self, event: sf.hooks.Event) -> None:
            seen.append(repr(event.payload))

    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, callbacks=[Spy()])
    assert lm(MSG, api_key=SECRET)[0].text == "echo: hi"
    assert "api_key" not in lm_server.requests[-1]
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    from rich.console import Console

    buf = io.StringIO()
    sf.inspect_history(3, console=Console(file=buf, width=200))
    surfaces = "\n".join([repr(global_history()), repr(list(lm.history)), buf.getvalue(), *seen])
    assert SECRET not in surfaces
    # the per-call key is not part of the cache identity either: a second call is a cache hit
    lm(MSG, api_key=SECRET)
    assert lm.history[-1].cache_hit


def test_a_per_call_key_error_is_scrubbed(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        lm(MSG, api_key=SECRET, cache=False)
    assert SECRET not in str(info.value)


def test_a_per_call_api_base_is_refused_clearly(lm_server: FakeOpenAIServer) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base)
    with pytest.raises(TypeError, match=r"api_base.*lm\.copy"):
        lm(MSG, api_base="http://127.0.0.1:9/v1")
    assert lm_server.requests == []


def test_secret_named_per_call_settings_stay_out_of_the_body(lm_server: FakeOpenAIServer) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True)
    lm(MSG, aws_secret_access_key=SECRET, cache=False)
    assert SECRET not in json.dumps(lm_server.requests[-1])
    assert SECRET not in repr(lm.history[-1])


def test_prompt_cache_key_is_a_request_parameter_not_a_secret(lm_server: FakeOpenAIServer) -> None:
    # OpenAI's prompt_cache_key ends in "_key" but is sent in the body (it was dropped as a secret)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, prompt_cache_key="tenant-1")
    lm(MSG, cache=False)
    assert lm_server.requests[-1]["prompt_cache_key"] == "tenant-1"
    lm(MSG, cache=False, prompt_cache_key="tenant-2")
    assert lm_server.requests[-1]["prompt_cache_key"] == "tenant-2"


def test_extra_headers_are_headers_never_recorded(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    # litellm's name for request headers was kept as a request parameter: shown by repr(lm), saved
    # by dump_state and recorded in history, Authorization value and all
    auth = {"Authorization": f"Bearer {SECRET}"}
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, extra_headers=auth)
    lm(MSG)
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    lm(MSG, extra_headers={"X-Trace": "t1"}, cache=False)
    assert lm_server.headers[-1]["x-trace"] == "t1"
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    surfaces = [repr(lm), json.dumps(lm.dump_state()), repr(list(lm.history)), repr(lm.copy())]
    assert all(SECRET not in s for s in surfaces)
    assert "extra_headers" not in lm_server.requests[-1]


# -- fast-path clients: one per endpoint and credential source, replaced ones closed -----------


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
        cwd=Path(__file__).parents[1],
    )
    assert out.returncode == 0, out.stderr
    assert "closed: [True]" in out.stdout


# -- LM() without a model is a faithful copy of the configured LM -----------------------------


def test_lm_without_a_model_copies_the_configured_lm_whole(lm_server: FakeOpenAIServer) -> None:
    # only the model, api_base and api_key were taken: connection settings, request defaults,
    # headers, timeout, retries, cache and route choice were silently dropped
    configured = LM(
        "openai/fake", api_base=lm_server.api_base, api_key=SECRET, organization="org-review",
        temperature=0.2, timeout=7.0, num_retries=1, headers={"X-Team": "qa"}, cache=False,
        fast_path=True, retry_delay=0.1, capabilities={"tools": True},
    )
    with sf.context(lm=configured):
        lm = LM()
        tuned = LM(temperature=0.9, cache=True, num_retries=3, timeout=None)
    assert lm is not configured and lm.model == "openai/fake" and lm.api_base == lm_server.api_base
    assert lm.kwargs == {"temperature": 0.2} and lm.timeout == 7.0 and lm.num_retries == 1
    assert lm.headers == {"X-Team": "qa"} and lm.cache is False and lm.fast_path is True
    assert lm.retry_delay == 0.1 and lm.supports("tools")
    assert repr(lm) == repr(configured) and SECRET not in repr(lm)
    lm(MSG)
    sent = lm_server.headers[-1]
    assert sent["authorization"] == f"Bearer {SECRET}" and sent["openai-organization"] == "org-review"
    assert sent["x-team"] == "qa" and lm_server.requests[-1]["temperature"] == 0.2
    # explicit arguments win, even when they equal the constructor's defaults
    assert tuned.kwargs == {"temperature": 0.9} and tuned.cache is True
    assert tuned.num_retries == 3 and tuned.timeout is None
    assert tuned.headers == {"X-Team": "qa"} and tuned.fast_path is True
    # its own history and usage, not the configured LM's
    assert len(lm.history) == 1 and len(configured.history) == 0


# -- streaming with n > 1: the candidates the stream did not bring are topped up ----------------


def _numbered(server: FakeOpenAIServer) -> None:
    from lm_fake_openai import Reply, completion_body, stream_chunks

    counter = iter(range(100))

    def reply(body: dict, headers: dict) -> Reply:
        text = f"answer {next(counter)}"
        if body.get("stream"):  # one streamed choice, whatever n asked (as many servers do)
            return Reply(chunks=stream_chunks(text))
        return Reply(body=completion_body([text]))

    server.reply = reply


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_with_n_tops_up_missing_candidates(
    lm_server: FakeOpenAIServer, fast_path: bool, mode: str
) -> None:
    import asyncio

    from sigform.lm import StreamDelta

    _numbered(lm_server)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path)
    if mode == "sync":
        items = list(lm.stream(MSG, n=3))
    else:

        async def collect() -> list[object]:
            return [item async for item in lm.astream(MSG, n=3)]

        items = asyncio.run(collect())
    *deltas, final = items
    assert len(final) == 3 and final[0].text == "answer 0"
    assert sorted(c.text for c in final[1:]) == ["answer 1", "answer 2"]  # concurrent: any order
    # candidate 0 streamed live; the topped-up ones are reported whole, with their own index
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert "".join(d.text for d in deltas if d.index == 0) == "answer 0"
    assert {d.index for d in deltas} == {0, 1, 2}
    assert [d.text for d in deltas if d.index > 0] == [c.text for c in final[1:]]
    assert lm_server.requests[0]["stream"] is True and lm_server.requests[0]["n"] == 3
    assert [r.get("n") for r in lm_server.requests[1:]] == [None, None]
    assert not any(r.get("stream") for r in lm_server.requests[1:])
    # usage covers the stream and both extra requests
    assert final[0].usage.prompt_tokens == 5 + 11 + 11 and final[2].usage == final[0].usage
    # the whole answer is cached as one: a repeat is a hit with all three candidates
    again = list(lm.stream(MSG, n=3))[-1]
    assert [c.text for c in again] == [c.text for c in final] and len(lm_server.requests) == 3


def test_a_stream_with_n_on_a_provider_without_n_streams_one_and_tops_up(lm_server: FakeOpenAIServer) -> None:
    from dataclasses import replace

    _numbered(lm_server)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, cache=False)
    lm._route = replace(lm._resolve(), supports_n=False)  # a provider that does not take n
    final = list(lm.stream(MSG, n=2))[-1]
    assert len(final) == 2 and final[0].text == "answer 0" and final[1].text == "answer 1"
    assert "n" not in lm_server.requests[0]  # never sent where it is not supported
    assert len(lm_server.requests) == 2


def test_a_failed_top_up_fails_the_stream_and_is_recorded(lm_server: FakeOpenAIServer) -> None:
    from lm_fake_openai import Reply, stream_chunks

    def reply(body: dict, headers: dict) -> Reply:
        if body.get("stream"):
            return Reply(chunks=stream_chunks("streamed"))
        return lm_server.error(400, "n is not supported here")

    lm_server.reply = reply
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, num_retries=0)
    with pytest.raises(sf.BadRequestError, match="not supported"):
        list(lm.stream(MSG, n=2))
    assert lm.history[-1].error and lm.stats["errors"] == 1
    _numbered(lm_server)
    before = len(lm_server.requests)
    assert len(list(lm.stream(MSG, n=2))[-1]) == 2  # nothing half-done was cached: asked again
    assert len(lm_server.requests) == before + 2
