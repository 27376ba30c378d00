"""The question sigform asks a server it did not start (what model does it serve?) is bounded
and answered by that server only (an attack on text_mode.server_facts, issue 27 third pass).

Before: a reply nested 200,000 deep raised RecursionError out of the first LM call; a server
dripping a byte every half second held that call for hours (the timeout applied per read); a
redirect was followed, so another server's answer decided how this one was spoken to.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest

from sigform.lm import text_mode

Answer = Callable[[BaseHTTPRequestHandler], None]


def _json(handler: BaseHTTPRequestHandler, payload: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def test_a_reply_nested_too_deep_is_no_answer(server: Callable[[Answer], str]) -> None:
    base = server(lambda h: _json(h, b"[" * 200_000))
    assert text_mode._fetch_json(base + "/models") is None  # was RecursionError
    assert text_mode.probe_server("m", base) == {"model_type": None, "grammar": False}


def test_a_server_answering_a_byte_at_a_time_is_cut_off(
    server: Callable[[Answer], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_mode, "PROBE_TIMEOUT", 0.5)

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(600):  # headers, then a body, one byte every 0.1 s: a minute in all
            handler.wfile.write(b"X")
            handler.wfile.flush()
            time.sleep(0.1)

    base = server(drip)
    started = time.monotonic()
    assert text_mode._fetch_json(base + "/models") is None
    assert time.monotonic() - started < 10  # generous: 0.5 s here; was the whole minute


def test_a_redirect_is_not_followed(server: Callable[[Answer], str]) -> None:
    answers = {"/v1/models": {"data": [{"id": "m", "owned_by": "llamacpp"}]}, "/props": {"chat_template": ""}}
    other = server(lambda h: _json(h, json.dumps(answers[h.path]).encode()))
    asked = []

    def redirect(handler: BaseHTTPRequestHandler) -> None:
        asked.append(handler.path)
        handler.send_response(302)
        handler.send_header("Location", other.removesuffix("/v1") + handler.path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    base = server(redirect)
    # followed, the other server's empty chat template made this one a base model (text mode)
    assert text_mode.probe_server("m", base) == {"model_type": None, "grammar": False}
    assert asked == ["/v1/models"]


def test_a_plain_server_is_still_read(server: Callable[[Answer], str]) -> None:
    answers = {"/v1/models": {"data": [{"id": "m", "owned_by": "llamacpp"}]}, "/props": {"chat_template": ""}}
    base = server(lambda h: _json(h, json.dumps(answers[h.path]).encode()))
    assert text_mode.probe_server("m", base) == {"model_type": "text", "grammar": False}
