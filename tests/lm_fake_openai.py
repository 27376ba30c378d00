"""A minimal loopback OpenAI-compatible chat-completions server for the LM-layer tests.

stdlib ``http.server`` in a thread on 127.0.0.1, port 0. By default it answers
``echo: <last user message>``; tests replace the behaviour with ``server.reply = fn`` where
``fn(body, headers) -> Reply`` (or push one-shot replies with ``server.queue``). Every request
body, its headers and its path are recorded in ``server.requests``, ``server.headers`` and
``server.paths``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the fake server sends: a JSON body, SSE chunks when ``chunks`` is set, or ``raw``
    bytes as they are (a compressed body, an HTML page)."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] | None = None
    delay: float = 0.0
    raw: bytes | None = None


def completion_body(
    texts: Iterable[str],
    *,
    model: str = "fake-model",
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    logprobs: Any = None,
) -> dict[str, Any]:
    """An OpenAI chat.completion body with one choice per text."""
    choices = []
    for i, text in enumerate(texts):
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": finish_reason}
        if logprobs is not None:
            choice["logprobs"] = logprobs
        choices.append(choice)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": usage
        or {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
            "completion_tokens_details": {"reasoning_tokens": 3},
            "prompt_tokens_details": {"cached_tokens": 2},
        },
    }


def stream_chunks(
    text: str,
    *,
    reasoning: str | None = None,
    model: str = "fake-model",
    tool_call: dict[str, Any] | None = None,
    pieces: int = 3,
) -> list[dict[str, Any]]:
    """SSE chunk dicts that spell out ``text`` (and ``reasoning``) in a few pieces, with usage."""

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        c: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            c["choices"] = []
            c["usage"] = usage
        return c

    out = [chunk({"role": "assistant", "content": ""})]
    if reasoning:
        out.append(chunk({"reasoning_content": reasoning}))
    step = max(1, len(text) // pieces)
    for i in range(0, len(text), step):
        out.append(chunk({"content": text[i : i + step]}))
    if tool_call:
        args = json.dumps(tool_call["arguments"])
        half = len(args) // 2
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": tool_call["id"],
                            "type": "function",
                            "function": {"name": tool_call["name"], "arguments": args[:half]},
                        }
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}))
    out.append(chunk({}, finish="tool_calls" if tool_call else "stop"))
    out.append(chunk({}, usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}))
    return out


def _last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def default_reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
    text = "echo: " + _last_user_text(body)
    if body.get("stream"):
        return Reply(chunks=stream_chunks(text, model=body.get("model", "fake-model")))
    n = int(body.get("n") or 1)
    return Reply(body=completion_body([text] * n, model=body.get("model", "fake-model")))


class FakeOpenAIServer:
    """Start with ``with FakeOpenAIServer() as server:``; ``server.api_base`` ends in ``/v1``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.reply: Callable[[dict[str, Any], dict[str, str]], Reply] = default_reply
        self.queue: deque[Reply] = deque()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # one write per response: no Nagle/delayed-ACK stalls
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(hdrs)
                    server.paths.append(self.path)
                    queued = server.queue.popleft() if server.queue else None
                reply = queued or server.reply(body, hdrs)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.chunks is not None:
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    for c in [*(f"data: {json.dumps(c)}\n\n" for c in reply.chunks), "data: [DONE]\n\n"]:
                        data = c.encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    return
                payload = reply.raw
                if payload is None:
                    payload = json.dumps(reply.body if reply.body is not None else {}).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:  # clients hang up
                pass

        self._httpd = QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def error(
        self, status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        """A provider-style error reply."""
        err: dict[str, Any] = {"message": message, "type": "invalid_request_error", "code": code}
        return Reply(status=status, body={"error": err}, headers=headers or {})

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- pytest fixtures (import them into a test module to use them) ---------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - the module is also usable without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def lm_server() -> Iterable[FakeOpenAIServer]:
        """A running fake OpenAI-compatible server."""
        with FakeOpenAIServer() as server:
            yield server

    @pytest.fixture
    def isolated_cache(tmp_path: Any, monkeypatch: Any) -> Iterable[Any]:
        """A private cache directory for one test (never ~/.cache/sigform); LM test modules
        use it from an autouse fixture of their own."""
        from sigform.lm.cache import reset_caches

        directory = tmp_path / "sigform-cache"
        monkeypatch.setenv("SIGFORM_CACHE_DIR", str(directory))
        reset_caches()
        yield directory
        reset_caches()

    @pytest.fixture(params=[True, False], ids=["fast_path", "litellm"])
    def fast_path(request: Any) -> bool:
        """Run a test through the openai-SDK fast path and through litellm."""
        return bool(request.param)
