"""Async fast-path calls over the SDK's aiohttp session (sigform.lm.sdk_session): the same
requests and the same results and errors as the SDK's wrapped route, for every reply a server
can give (compressed bodies, error statuses, redirects, malformed bodies, timeouts, a server
that went away)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body

import sigform as sf
from sigform.lm import LM, openai_backend

MSG = [{"role": "user", "content": "hi"}]
VOLATILE = {"content-length", "x-stainless-read-timeout", "x-stainless-retry-count"}


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def make_lm(server: FakeOpenAIServer, **kw: Any) -> LM:
    return LM("openai/fake", api_base=server.api_base, api_key="sk-test-key-0123456789",
              cache=False, num_retries=0, **kw)


def outcome(lm: LM, **kw: Any) -> tuple[str, str]:
    """The text of an async call, or its error's type and message."""
    async def run() -> list[sf.Completion]:
        return await lm.acall(MSG, **kw)

    try:
        return "ok", asyncio.run(run())[0].text
    except sf.LMError as err:
        return type(err).__name__, str(err)


def warm_then(server: FakeOpenAIServer, lm: LM, reply: Reply | None, **kw: Any) -> tuple[str, str]:
    """A first call (it makes the client's aiohttp session), then a call answered by ``reply``,
    in one event loop; the second call's outcome."""
    async def run() -> tuple[str, str]:
        await lm.acall(MSG)
        if reply is not None:
            server.queue.append(reply)
        try:
            return "ok", (await lm.acall(MSG, **kw))[0].text
        except sf.LMError as err:
            return type(err).__name__, str(err)

    return asyncio.run(run())


def both_routes(
    monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer, reply: Callable[[], Reply | None], **kw: Any
) -> tuple[tuple[str, str], tuple[str, str]]:
    """The second call's outcome over the session, then over the SDK's wrapped route."""
    sessions = warm_then(server, make_lm(server), reply(), **kw)
    with monkeypatch.context() as m:
        m.setattr(openai_backend, "session_post", lambda *a: None)
        wrapped = warm_then(server, make_lm(server), reply(), **kw)
    return sessions, wrapped


def count_httpx_sends(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    import httpx2

    sent: list[object] = []
    original = httpx2.AsyncClient.send

    async def send(self: Any, request: Any, **kw: Any) -> Any:
        sent.append(request)
        return await original(self, request, **kw)

    monkeypatch.setattr(httpx2.AsyncClient, "send", send)
    return sent


def test_calls_after_the_first_skip_the_httpx_client(
    lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = count_httpx_sends(monkeypatch)
    lm = make_lm(lm_server, headers={"X-Team": "a"})

    async def run() -> list[str]:
        return [(await lm.acall(MSG, headers={"X-Call": "b"}, temperature=0.5))[0].text for _ in range(3)]

    assert asyncio.run(run()) == ["echo: hi"] * 3
    assert len(sent) == 1  # the first request made the session; the others went straight over it
    first, *rest = zip(lm_server.requests, lm_server.headers, strict=True)
    for body, headers in rest:  # what the SDK's route sent, byte for byte but the volatile headers
        assert body == first[0]
        assert {k: v for k, v in headers.items() if k not in VOLATILE} == {
            k: v for k, v in first[1].items() if k not in VOLATILE
        }
        assert headers["authorization"] == "Bearer sk-test-key-0123456789"
        assert headers["x-team"] == "a" and headers["x-call"] == "b"
        assert int(headers["content-length"]) == len(json.dumps(body, separators=(",", ":")).encode())


def test_a_compressed_body_is_decoded(lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = gzip.compress(json.dumps(completion_body(["zipped"])).encode())

    def reply() -> Reply:
        return Reply(raw=payload, headers={"content-encoding": "gzip"})

    sessions, wrapped = both_routes(monkeypatch, lm_server, reply)
    assert sessions == wrapped == ("ok", "zipped")


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_error_statuses_raise_what_the_sdk_route_raises(
    status: int, lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reply() -> Reply:
        return Reply(status=status, body={"error": {"message": f"status {status} here", "type": "x"}})

    sessions, wrapped = both_routes(monkeypatch, lm_server, reply)
    assert sessions == wrapped
    assert sessions[0] != "ok" and f"status {status} here" in sessions[1]


def test_a_compressed_error_body_is_read(
    lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = gzip.compress(json.dumps({"error": {"message": "bad key, zipped"}}).encode())

    def reply() -> Reply:
        return Reply(status=401, raw=payload, headers={"content-encoding": "gzip"})

    sessions, wrapped = both_routes(monkeypatch, lm_server, reply)
    assert sessions == wrapped
    assert sessions[0] == "AuthenticationError" and "bad key, zipped" in sessions[1]


def test_malformed_bodies_are_reported_alike(
    lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for raw in (b"<html>gateway</html>", b"[]", b""):
        sessions, wrapped = both_routes(monkeypatch, lm_server, lambda raw=raw: Reply(raw=raw))
        assert sessions == wrapped
        assert sessions[0] == "ProviderError"


def test_a_redirect_is_followed(lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    target = lm_server.api_base + "/chat/completions"

    def reply() -> Reply:
        return Reply(status=307, raw=b"", headers={"location": target})

    sessions, wrapped = both_routes(monkeypatch, lm_server, reply)
    assert sessions == wrapped == ("ok", "echo: hi")
    assert len(lm_server.requests) == 2 * 3  # per route: the warm-up, the redirected request, the resend


def test_a_slow_answer_times_out(lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions, wrapped = both_routes(
        monkeypatch, lm_server, lambda: Reply(body=completion_body(["late"]), delay=0.6), timeout=0.2
    )
    assert sessions == wrapped
    assert sessions[0] == "LMTimeoutError"


def test_a_server_that_went_away(monkeypatch: pytest.MonkeyPatch) -> None:
    results = []
    for route in ("sessions", "wrapped"):
        with monkeypatch.context() as m:
            if route == "wrapped":
                m.setattr(openai_backend, "session_post", lambda *a: None)
            server = FakeOpenAIServer().__enter__()
            # the first answer closes its connection, so the next call must connect again
            server.queue.append(Reply(body=completion_body(["first"]), headers={"connection": "close"}))
            lm, url = make_lm(server), server.api_base

            async def run() -> tuple[str, str]:
                assert (await lm.acall(MSG))[0].text == "first"  # noqa: B023
                server.__exit__(None, None, None)  # noqa: B023  # the server goes away mid-run
                try:
                    return "ok", (await lm.acall(MSG))[0].text  # noqa: B023
                except sf.LMError as err:
                    return type(err).__name__, str(err).replace(url, "<url>")  # noqa: B023

            results.append(asyncio.run(run()))
    assert results[0] == results[1]
    assert results[0][0] == "ProviderError" and "could not reach <url>" in results[0][1]
    assert "connection refused" in results[0][1]


def test_only_the_sdks_plain_aiohttp_transport_is_bypassed() -> None:
    import httpx2
    import openai

    from sigform.lm.sdk_session import session_post

    def session_for(http_client: Any) -> object:
        client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http_client)
        direct = openai_backend._Direct(client)
        return direct.session

    assert session_for(openai.DefaultAioHttpClient()) is not None
    assert session_for(openai.DefaultAioHttpClient(proxy="http://127.0.0.1:8")) is None
    assert session_for(httpx2.AsyncClient()) is None  # httpx's own transport: the wrapped route
    assert session_for(openai.DefaultAioHttpClient(event_hooks={"request": [lambda r: None]})) is None
    assert session_post(object(), "http://x", httpx2.Headers(), {}) is None  # internals moved
