"""A small HTTP/1.1 server on 127.0.0.1 that runs its own asyncio loop in a background thread.

It is the harness under every fake provider: it parses requests with h11 (keep-alive,
chunked request bodies), records each one (secrets redacted) and sends back what an async
handler returns -- a whole body or a stream of chunks (for server-sent events). One loop
serves every connection, so hundreds of concurrent requests that each sleep cost nothing but
the sleep.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import h11

__all__ = ["REDACTED", "LoopbackServer", "RecordedRequest", "Response"]

REDACTED = "<redacted>"

# Header and query names whose values are credentials: never stored.
_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
    }
)
_SECRET_QUERY = frozenset({"key", "api_key", "api-key", "token"})
_READ_SIZE = 65536


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, with credential values replaced by ``<redacted>``.

    ``headers`` has lower-case names; ``query`` is the decoded query string; ``received`` is when
    the request had fully arrived (``time.monotonic()`` seconds, for measuring request rates).
    """

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    received: float = 0.0

    @property
    def json(self) -> Any:
        """The body decoded as JSON (``None`` for an empty body)."""
        return json.loads(self.body) if self.body else None


@dataclass
class Response:
    """What a handler answers: a whole ``body``, or ``stream`` chunks sent as they come."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    stream: AsyncIterable[bytes] | Iterable[bytes] | None = None

    @classmethod
    def json(cls, payload: object, status: int = 200, headers: Iterable[tuple[str, str]] = ()) -> Response:
        """A JSON response."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        return cls(status, [("content-type", "application/json"), *headers], body)


Handler = Callable[[RecordedRequest], Awaitable[Response]]


def _redact(request: h11.Request, body: bytes) -> RecordedRequest:
    headers: dict[str, str] = {}
    for raw_name, raw_value in request.headers:
        name = raw_name.decode("latin-1").lower()
        headers[name] = REDACTED if name in _SECRET_HEADERS else raw_value.decode("latin-1")
    target = urlsplit(request.target.decode("latin-1"))
    query = {k: (REDACTED if k.lower() in _SECRET_QUERY else v) for k, v in parse_qsl(target.query)}
    return RecordedRequest(request.method.decode(), target.path, query, headers, body, time.monotonic())


class LoopbackServer:
    """An HTTP/1.1 server on ``127.0.0.1`` (a free port) with its own loop in a daemon thread.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Pass ``handler`` or
    override :meth:`handle`. Every request is appended to :attr:`requests`; a handler that
    raises answers 500 and the exception is appended to :attr:`failures`.
    """

    def __init__(self, handler: Handler | None = None, *, host: str = "127.0.0.1", backlog: int = 2048):
        self._handler = handler
        self.host = host
        self.port = 0
        self.backlog = backlog
        self.requests: list[RecordedRequest] = []
        self.failures: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        if not self.port:
            raise RuntimeError("the server is not running: call start() or use it as a context manager")
        return f"http://{self.host}:{self.port}"

    def start(self) -> LoopbackServer:
        """Start listening; returns once the port is bound."""
        if self._thread is not None:
            return self
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name=f"{type(self).__name__}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"could not start {type(self).__name__}") from self._start_error
        return self

    def stop(self) -> None:
        """Close the listener and every open connection, then join the thread."""
        if self._thread is None or self._loop is None or self._stopping is None:
            return
        self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()
        self._thread = None
        self.port = 0

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> LoopbackServer:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()
            self._loop = None

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        try:
            server = await asyncio.start_server(
                self._on_connection, self.host, 0, backlog=self.backlog, reuse_address=True
            )
        except BaseException as exc:  # report bind errors to start() instead of dying silently
            self._start_error = exc
            self._ready.set()
            return
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stopping.wait()
            server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)

    # -- requests --------------------------------------------------------------------------
    async def handle(self, request: RecordedRequest) -> Response:
        """Answer one request (override, or pass ``handler`` to the constructor)."""
        if self._handler is None:
            return Response.json({"error": "no handler"}, status=501)
        return await self._handler(request)

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(conn, reader)
                if request is None:
                    break
                self.requests.append(request)
                try:
                    response = await self.handle(request)
                except Exception as exc:
                    self.failures.append(exc)
                    response = Response.json({"error": f"{type(exc).__name__}: {exc}"}, status=500)
                await self._write_response(conn, writer, response)
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
        except (ConnectionError, h11.ProtocolError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _read_request(
        self, conn: h11.Connection, reader: asyncio.StreamReader
    ) -> RecordedRequest | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(_READ_SIZE))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return _redact(head, bytes(body))
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None

    async def _write_response(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, response: Response
    ) -> None:
        headers = list(response.headers)
        if response.stream is None:
            headers.append(("content-length", str(len(response.body))))
            out = conn.send(h11.Response(status_code=response.status, headers=headers)) or b""
            if response.body:
                out += conn.send(h11.Data(data=response.body)) or b""
            writer.write(out + (conn.send(h11.EndOfMessage()) or b""))
            await writer.drain()
            return
        # no content-length: h11 sends the stream with chunked transfer encoding
        writer.write(conn.send(h11.Response(status_code=response.status, headers=headers)) or b"")
        await writer.drain()
        if isinstance(response.stream, AsyncIterable):
            async for chunk in response.stream:
                await self._send_chunk(conn, writer, chunk)
        else:
            for chunk in response.stream:
                await self._send_chunk(conn, writer, chunk)
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await writer.drain()

    @staticmethod
    async def _send_chunk(conn: h11.Connection, writer: asyncio.StreamWriter, chunk: bytes) -> None:
        if chunk:
            writer.write(conn.send(h11.Data(data=chunk)) or b"")
            await writer.drain()
