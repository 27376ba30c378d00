"""The fast path: chat and text completions to OpenAI-compatible endpoints, over HTTP, owned here.

Used for ``openai/...`` with an ``api_base`` (or none: OpenAI's API, or ``OPENAI_BASE_URL``),
``hosted_vllm/``, ``lm_studio/``, ``llamafile/`` and the embedded local model: a call imports
neither litellm nor the openai SDK. The wire format (:mod:`sigform.lm.wire`): ``POST
{api_base}/chat/completions`` (or ``/completions`` for a request with a ``prompt``), a JSON body
back, or server-sent events for a stream; the body and chunks go back as dicts, unchanged.

Sync requests go over ``http.client`` (:mod:`sigform.lm.http11`: no HTTP library to import for a
first call, and half the CPU per request of aiohttp on the loop); async ones over one ``aiohttp``
session per event loop (at 64 concurrent calls httpx's async pool took 14 s, aiohttp 1.1 s, raw
sockets 0.8 s), closed when its loop shuts down its async generators. A sync request started while
another is in flight goes the async way on the runtime's loop (:mod:`sigform.runtime`): a
blocking stack costs several times the CPU per request when 64 threads share it. Clients carry
no credential (each request brings its headers) and share one TLS context (``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` honoured). A forked child makes its own; exit closes them. Failures raise the
:mod:`sigform.lm.wire` errors, which :mod:`sigform.lm.errors_map` maps like any provider's.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urljoin

from sigform import runtime
from sigform.lm.http11 import MAX_REDIRECTS, Connections, late, proxy_auth, proxy_for
from sigform.lm.request import Request
from sigform.lm.response import MalformedResponseError, parse_body
from sigform.lm.wire import (
    DONE,
    FAST_PROVIDERS,
    Outgoing,
    StatusError,
    TimedOut,
    TooManyRedirects,
    TransportError,
    Unreachable,
    chunk_of,
    redirect_refused,
    request_model_name,
)

__all__ = ["FAST_PROVIDERS", "StatusError", "TimedOut", "Transport", "Unreachable", "request_model_name"]

_CONNECT_S, _READ_S = 5.0, 600.0  # without a timeout: 5 s to connect, 10 minutes to answer
# bytes of one answer, or of one line of a stream: a larger one is refused, never held in memory
# whole (a server sending without end grew a process past 3 GB in 40 s)
_MAX_BODY = 64 * 1024 * 1024
_MAX_CONNECTIONS = 1000
_DEFAULT_TIMEOUT: Any = None  # aiohttp.ClientTimeout of _CONNECT_S / _READ_S, made with the first session
_CONNECT_ONLY: Any = None  # and of _CONNECT_S alone


async def _lines(content: Any, url: str, seconds: float) -> AsyncIterator[str]:
    """The lines of an aiohttp body (up to :data:`_MAX_BODY` each: aiohttp's own line reader
    stops at 64 KiB), each arriving within ``seconds`` of the previous one's end (a read's own
    timer, reset at every piece, let a line dripped a byte at a time hold a call for hours)."""
    pending = b""
    line_deadline = time.monotonic() + seconds
    async for piece in content.iter_any():
        now = time.monotonic()
        if now > line_deadline:
            raise late(seconds, url)
        if b"\n" in piece:
            line_deadline = now + seconds
        *lines, pending = (pending + piece).split(b"\n")
        if len(pending) > _MAX_BODY:
            raise _too_large("a streamed line")
        for line in lines:
            yield line.decode("utf-8").rstrip("\r")
    if pending:
        yield pending.decode("utf-8")


def _read(response: Any, url: str, seconds: float) -> bytes:
    """A sync response's body: at most :data:`_MAX_BODY` bytes, arriving within ``seconds``
    (a timeout per read let a server sending a byte at a time hold a call for hours)."""
    body = _Body(url, seconds)
    while chunk := response.read1(1 << 20):
        body.add(chunk)
    response.read()  # b"": read1 leaves a response read to its length open, read() closes it
    return b"".join(body.parts)


async def _aread(response: Any, url: str, seconds: float) -> bytes:
    """:func:`_read` for an aiohttp response."""
    body = _Body(url, seconds)
    async for chunk in response.content.iter_any():
        body.add(chunk)
    return b"".join(body.parts)


class _Body:
    """The pieces of an answer as they arrive: at most :data:`_MAX_BODY` bytes, all within
    ``seconds`` of the first read (both routes read through one)."""

    def __init__(self, url: str, seconds: float) -> None:
        self.url, self.seconds = url, seconds
        self.deadline = time.monotonic() + seconds
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > _MAX_BODY:
            raise _too_large("the answer")
        if time.monotonic() > self.deadline:
            raise late(self.seconds, self.url)
        self.parts.append(chunk)


class Transport:
    """The fast path's :class:`~sigform.lm.backend.Backend` (one per process: :func:`get_backend`)."""

    name = "openai-compatible"

    def __init__(self) -> None:
        self._client: Connections | None = None
        self._sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # per loop
        self._lock = threading.Lock()
        self._in_flight = 0  # sync requests being sent (more than one: the background loop sends)
        self._inherited: list[Any] = []  # a forked child's copies of its parent's: never used
        runtime.forget_after_fork(self)
        runtime.on_exit(self._close_client)

    def _after_fork(self) -> None:
        # kept unclosed: closing would end the parent's connections (and TLS sessions) too
        self._inherited.append((self._client, self._sessions))
        self._client, self._sessions = None, weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._in_flight = 0

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- clients -----------------------------------------------------------------------------

    def _sync_client(self) -> Connections:
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    self._client = _new_client()
                client = self._client
        return client

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        held = self._sessions.get(loop)
        if held is None:
            session = _new_session()
            closer = _close_at_loop_shutdown(session)
            await closer.__anext__()  # the loop keeps only a weak reference to the closer
            held = self._sessions[loop] = (session, closer)
        return held[0]

    def prepare(self, req: Request) -> None:
        """Make the clients ``req`` may be sent with (see :mod:`sigform.lm.backend`)."""
        self._sync_client()
        if not runtime.in_loop() and runtime.loop() not in self._sessions:
            runtime.run(self.aprepare(req))

    async def aprepare(self, req: Request) -> None:
        await self._session()

    # -- calls -------------------------------------------------------------------------------

    def complete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        """Send ``req``; the JSON body and the cost (unknown here: None). Credentials are
        resolved in the caller's thread, whichever thread sends."""
        out = Outgoing(req)
        with self._lock:
            self._in_flight += 1
            crowded = self._in_flight > 1
        try:
            if crowded and not runtime.in_loop():
                return runtime.run(self._apost(out)), None
            return parse_body(self._post(out)), None
        finally:
            with self._lock:
                self._in_flight -= 1

    def _post(self, out: Outgoing) -> bytes:
        connect_s, read_s = _limits(out.timeout)
        with _sync_failures(out.url), self._sync_client().post(
            out.url, out.headers, out.content, connect_s, read_s
        ) as response:
            data = _read(response, out.url, read_s)
            if response.status >= 400:
                raise StatusError(response.status, _headers(response), data, out.url)
        return data

    async def acomplete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        return await self._apost(Outgoing(req)), None

    async def _apost(self, out: Outgoing) -> dict[str, Any]:
        seconds = _limits(out.timeout)[1]
        return parse_body(await _within(self._aread_answer(out, seconds), seconds, out.url))

    async def _aread_answer(self, out: Outgoing, seconds: float) -> bytes:
        session = await self._session()
        with _Failures(out.url):
            async with session.post(out.url, **_aiohttp_options(out, per_read=False)) as response:
                _check_redirects(response, out.url)
                data = await _aread(response, out.url, seconds)
                if response.status >= 400:
                    raise StatusError(response.status, response.headers, data, out.url)
        return data  # an HTML page or `[]` is a malformed response

    def stream(self, req: Request) -> Iterator[dict[str, Any]]:
        """Chunk dicts of a streamed response."""
        out = Outgoing(req, stream=True)
        connect_s, read_s = _limits(out.timeout)
        with _sync_failures(out.url), self._sync_client().post(
            out.url, out.headers, out.content, connect_s, read_s, whole=False
        ) as response:
            if response.status >= 400:
                error = _read(response, out.url, read_s)
                raise StatusError(response.status, _headers(response), error, out.url)
            while line := response.readline(_MAX_BODY + 1):
                if len(line) > _MAX_BODY:
                    raise _too_large("a streamed line")
                chunk = chunk_of(line.decode("utf-8").rstrip("\r\n"))
                if chunk is DONE:
                    # to its end, so the connection is reused; past the bounds it is closed instead
                    with contextlib.suppress(TransportError, MalformedResponseError):
                        _read(response, out.url, read_s)
                    return
                if chunk is not None:
                    yield chunk

    async def astream(self, req: Request) -> AsyncIterator[dict[str, Any]]:
        out = Outgoing(req, stream=True)
        session = await self._session()
        seconds = _limits(out.timeout)[1]
        with _Failures(out.url):
            # the headers within the timeout; then each line within it
            posted = session.post(out.url, **_aiohttp_options(out, per_read=True))
            response = await _within(posted, seconds, out.url)
        with _Failures(out.url):
            async with response:
                _check_redirects(response, out.url)
                if response.status >= 400:
                    error = await _aread(response, out.url, seconds)
                    raise StatusError(response.status, response.headers, error, out.url)
                async for line in _lines(response.content, out.url, seconds):
                    chunk = chunk_of(line)
                    if chunk is DONE:
                        return
                    if chunk is not None:
                        yield chunk


def _check_redirects(response: Any, url: str) -> None:
    """aiohttp follows a 301/302/303 as a GET without the body, whose answer is no answer to the
    request (it was taken as one): only 307 and 308, as the sync route (:mod:`sigform.lm.http11`)."""
    for hop in response.history:
        if hop.status not in (307, 308):
            raise redirect_refused(hop.status, urljoin(str(hop.url), hop.headers.get("Location", "")), url)


async def _within(answer: Any, seconds: float, url: str) -> Any:
    """``await answer``, given up after ``seconds`` (aiohttp's timeouts are per read: a server
    sending its headers a byte at a time held a call for as long as it liked)."""
    try:
        # in a task of its own (not asyncio.timeout): each of the several waits of one aiohttp
        # request then wakes that task only, not the caller's whole stack of coroutines
        return await asyncio.wait_for(answer, seconds)
    except (asyncio.TimeoutError, TimeoutError) as exc:
        if isinstance(exc, TransportError):
            raise
        raise late(seconds, url) from None


class _Failures:
    """``with _Failures(url):`` raises aiohttp's failures as :class:`TimedOut` /
    :class:`Unreachable` (a class, not a generator: it wraps every request)."""

    __slots__ = ("url",)

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None or isinstance(exc, TransportError):
            return
        import aiohttp

        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            raise TimedOut("no answer within the timeout", self.url) from exc
        if isinstance(exc, aiohttp.TooManyRedirects):
            raise TooManyRedirects(MAX_REDIRECTS, self.url) from None
        if isinstance(exc, getattr(aiohttp, "NonHttpUrlRedirectClientError", ())):  # aiohttp >= 3.10
            raise redirect_refused(307, str(exc.args[0]) if exc.args else "", self.url) from None
        if isinstance(exc, aiohttp.ClientError):
            raise Unreachable(f"{type(exc).__name__}: {exc}", self.url) from exc


def _tls_context() -> Any:
    """The CAs of ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` if set, else certifi's (as httpx does)."""
    import ssl

    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


_contexts: dict[tuple[str | None, str | None], Any] = {}


def _shared_tls_context() -> Any:
    """One TLS context per process and CA setting (loading the CAs costs tens of milliseconds)."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _contexts.get(key)
    if context is None:
        context = _contexts[key] = _tls_context()
    return context


def _new_client() -> Connections:
    return Connections(_shared_tls_context)


@contextlib.contextmanager
def _sync_failures(url: str) -> Iterator[None]:
    """The socket's, TLS's and ``http.client``'s failures as :class:`TimedOut` / :class:`Unreachable`."""
    try:
        yield
    except TransportError:
        raise
    except TimeoutError as exc:
        raise TimedOut("no answer within the timeout", url) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(f"{type(exc).__name__}: {exc}", url) from exc


def _headers(response: http.client.HTTPResponse) -> dict[str, str]:
    return {name.lower(): value for name, value in response.getheaders()}


def _limits(seconds: float | None) -> tuple[float, float]:
    """Seconds to connect and to wait for each read."""
    return (seconds, seconds) if seconds is not None else (_CONNECT_S, _READ_S)


def _new_session() -> Any:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=_MAX_CONNECTIONS, ssl=_shared_tls_context())
    global _DEFAULT_TIMEOUT, _CONNECT_ONLY
    _DEFAULT_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_S, sock_read=_READ_S)
    _CONNECT_ONLY = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_S)
    # trust_env off: aiohttp would look the proxy and ~/.netrc up in a thread, twice per request;
    # the proxy is looked up by _aiohttp_options instead (every request carries its credentials)
    return aiohttp.ClientSession(connector=connector, trust_env=False)


def _aiohttp_options(out: Outgoing, *, per_read: bool) -> dict[str, Any]:
    """``session.post``'s keywords for ``out``: body, headers, timeouts and the environment's
    proxy (looked up here: the session does not, see :func:`_new_session`). Without
    ``per_read`` no read has a timeout of its own: the whole answer is awaited within the
    timeout (:func:`_within`), which a read's timer, reset at every piece read, never beats."""
    import aiohttp

    seconds = out.timeout
    if seconds is None:
        timeout = _DEFAULT_TIMEOUT if per_read else _CONNECT_ONLY
    elif per_read:
        timeout = aiohttp.ClientTimeout(total=None, connect=seconds, sock_connect=seconds, sock_read=seconds)
    else:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=seconds)
    options: dict[str, Any] = {
        "data": out.content,
        "headers": out.headers,
        "allow_redirects": True,
        "max_redirects": MAX_REDIRECTS + 1,  # aiohttp counts the requests, http11 the redirects
        "timeout": timeout,
    }
    proxy = proxy_for(out.url)
    if proxy is not None:
        options["proxy"] = proxy
        options["proxy_headers"] = proxy_auth(proxy)
    return options


async def _close_at_loop_shutdown(session: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await session.close()


_backend: Transport | None = None


def get_backend() -> Transport:
    """The process-wide fast-path backend (its clients are shared by every LM)."""
    global _backend
    if _backend is None:
        _backend = Transport()
    return _backend


def _too_large(what: str) -> MalformedResponseError:
    return MalformedResponseError(f"{what} is larger than {_MAX_BODY >> 20} MiB; it was not read")
