"""A loopback HTTP server that answers every request with the test's own function: the hostile
and broken servers of the transport and probe tests (tests/lm/test_transport_bounds.py,
tests/lm/test_server_probe_hostile.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Answer = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def server() -> Iterator[Callable[[Answer], str]]:
    """``server(answer)`` starts a server whose GETs and POSTs (body read first) ``answer``
    writes to, and returns its ``/v1`` base URL; every server stops after the test."""
    started: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    answer(self)
                except OSError:  # the client hung up (gave up): what these tests want
                    pass

            do_POST = do_GET

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1"

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()
