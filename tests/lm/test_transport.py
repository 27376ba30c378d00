"""The fast path's own transport (sigform.lm.transport): the wire format both ways, sync and async.

What the SDK used to do for the fast path and the other tests do not show: a text-completion
request goes to /completions, long server-sent events are read whole, one TLS context serves
every client, and each event loop's session is closed when the loop ends.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import warnings
from pathlib import Path
from typing import Any

import pytest

from sigform.lm import transport
from sigform.lm.credentials import Credential
from sigform.lm.request import Request
from sigform.testing.providers import LoopbackServer, RecordedRequest, Response


class Echo(LoopbackServer):
    """Answers a body saying which path it was sent to; streams ``events`` when asked to."""

    def __init__(self, events: list[bytes] | None = None) -> None:
        super().__init__()
        self.events = events

    async def handle(self, request: RecordedRequest) -> Response:
        if request.json.get("stream"):
            return Response(200, [("content-type", "text/event-stream")], stream=self.events or [])
        return Response.json({"path": request.path, "choices": []})


def request(base: str, **extra: Any) -> Request:
    req = Request("openai/m", "openai", [{"role": "user", "content": "hi"}], {"temperature": 0},
                  api_base=base, api_key=Credential("api_key", "sk-t", secret=True))
    for name, value in extra.items():
        setattr(req, name, value)
    return req


def test_a_text_completion_goes_to_completions_with_its_prompt_and_no_messages() -> None:
    with Echo() as server:
        base = f"{server.base_url}/v1"
        chat, _ = transport.Transport().complete(request(base))
        text, _ = asyncio.run(transport.Transport().acomplete(request(base, prompt="Text: a\nJSON:")))
    assert chat["path"] == "/v1/chat/completions" and text["path"] == "/v1/completions"
    sent_chat, sent_text = (r.json for r in server.requests)
    assert sent_chat == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    assert sent_text == {"model": "m", "prompt": "Text: a\nJSON:", "temperature": 0}
    assert server.requests[0].headers["authorization"] == "<redacted>"  # a bearer key was sent


def test_a_streamed_event_longer_than_aiohttps_line_limit_is_read_whole() -> None:
    big = {"choices": [{"index": 0, "delta": {"content": "x" * 200_000}}]}
    events = [b"data: " + json.dumps(big).encode() + b"\n\n", b": a comment\n\n", b"data: [DONE]\n\n"]

    async def read(backend: transport.Transport, req: Request) -> list[Any]:
        return [chunk async for chunk in backend.astream(req)]

    with Echo(events) as server:
        base = f"{server.base_url}/v1"
        synced = list(transport.Transport().stream(request(base)))
        awaited = asyncio.run(read(transport.Transport(), request(base)))
    assert synced == awaited == [big]


def test_one_tls_context_per_ca_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import certifi

    monkeypatch.setattr(transport, "_contexts", {})
    first = transport._shared_tls_context()
    assert isinstance(first, ssl.SSLContext) and transport._shared_tls_context() is first
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert transport._shared_tls_context() is not first  # a changed CA file gets its own


def test_each_loops_session_is_closed_when_the_loop_ends() -> None:
    made: list[Any] = []
    real = transport._new_session

    def spy() -> Any:
        made.append(real())
        return made[-1]

    backend = transport.Transport()
    with Echo() as server, warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        base = f"{server.base_url}/v1"
        transport._new_session = spy  # type: ignore[assignment]
        try:
            for _ in range(2):
                asyncio.run(backend.acomplete(request(base)))
        finally:
            transport._new_session = real  # type: ignore[assignment]
    assert len(made) == 2 and all(session.closed for session in made)


class Moves(LoopbackServer):
    """Answers 307 to ``/v1/...`` with the same path under ``/v2/``, then echoes."""

    async def handle(self, request: RecordedRequest) -> Response:
        if request.path.startswith("/v1/"):
            return Response(307, [("location", request.path.replace("/v1/", "/v2/"))])
        return Response.json({"path": request.path, "choices": []})


def test_a_307_is_followed_with_the_same_post_on_both_routes() -> None:
    with Moves() as server:
        base = f"{server.base_url}/v1"
        synced, _ = transport.Transport().complete(request(base))
        awaited, _ = asyncio.run(transport.Transport().acomplete(request(base)))
    assert synced["path"] == awaited["path"] == "/v2/chat/completions"
    assert [r.method for r in server.requests] == ["POST"] * 4
    assert server.requests[1].json == server.requests[0].json


def test_a_kept_alive_connection_found_dead_is_replaced() -> None:
    import socket

    backend = transport.Transport()
    with Echo() as server:
        base = f"{server.base_url}/v1"
        backend.complete(request(base))
        (kept,) = [conn for conns in backend._sync_client()._idle.values() for conn in conns]
        kept.sock.shutdown(socket.SHUT_RDWR)  # as when the server drops an idle connection
        body, _ = backend.complete(request(base))
    assert body["path"] == "/v1/chat/completions" and len(server.requests) == 2


def test_a_proxy_from_the_environment_gets_the_whole_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with Echo() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://puser:ppass@{proxy.base_url.removeprefix('http://')}")
        monkeypatch.setenv("NO_PROXY", "localhost")
        body, _ = transport.Transport().complete(request("http://models.example:8000/v1"))
    assert body["path"] == "/v1/chat/completions"  # models.example was never looked up: the proxy answered
    assert proxy.requests[0].headers["host"] == "models.example:8000"
    assert proxy.requests[0].headers["proxy-authorization"] == "<redacted>"


def test_the_async_route_takes_the_proxy_from_the_environment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with Echo() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://puser:ppass@{proxy.base_url.removeprefix('http://')}")
        monkeypatch.setenv("NO_PROXY", "localhost")
        body, _ = asyncio.run(transport.Transport().acomplete(request("http://models.example:8000/v1")))
    assert body["path"] == "/v1/chat/completions"
    assert proxy.requests[0].headers["host"] == "models.example:8000"
    assert proxy.requests[0].headers["proxy-authorization"] == "<redacted>"


def test_no_proxy_names_a_host_that_is_reached_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    with Echo() as server:
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        synced, _ = transport.Transport().complete(request(f"{server.base_url}/v1"))
        awaited, _ = asyncio.run(transport.Transport().acomplete(request(f"{server.base_url}/v1")))
    assert synced["path"] == awaited["path"] == "/v1/chat/completions"
