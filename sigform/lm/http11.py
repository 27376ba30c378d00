"""Sync HTTP/1.1 POSTs over the standard library's ``http.client``, connections kept alive.

The fast path's sync route (see :mod:`sigform.lm.transport` for why). What this adds to
``http.client``: connections kept per origin (and proxy), reused by any thread, one closed by the
server while idle replaced once before anything was read from it; the proxy of ``HTTPS_PROXY`` /
``HTTP_PROXY`` / ``ALL_PROXY`` unless ``NO_PROXY`` names the host; 307 and 308 redirects followed
(the same POST; credentials only to the same origin). A response is handed over open: read to its
end, its connection goes back to the pool, otherwise it is closed.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import io
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from sigform.lm.wire import TimedOut, TooManyRedirects, redirect_refused

# the variables a proxy is read from (urllib.request's names, either case): for an http or https
# URL only its scheme's and all_proxy matter (a lookup of a variable not set costs microseconds)
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_SCHEME_PROXY_VARIABLES = {
    scheme: tuple(name for name in _PROXY_VARIABLES if name.lower() in (f"{scheme}_proxy", "all_proxy"))
    for scheme in ("http", "https")
}
MAX_REDIRECTS = 5
_MAX_IDLE = 32  # idle connections kept per origin
# what a kept-alive connection the server has closed raises on reuse
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class _Timed(io.RawIOBase):
    """The socket of one response as ``http.client`` reads it: each read waits at most
    ``read_s``, and none waits past ``deadline`` (monotonic; None: no deadline). The status line
    and headers are read through it too: with a timeout per read only, a server sending them a
    byte at a time held a call for as long as it liked. With ``per_line`` (a stream's body) the
    deadline is ``read_s`` after each line is asked for (:class:`_Response`)."""

    def __init__(self, sock: Any, url: str, read_s: float, deadline: float | None) -> None:
        super().__init__()
        self.sock, self.url, self.read_s, self.deadline = sock, url, read_s, deadline
        self.per_line = False
        # the socket's own reader: it keeps the socket open while the response is read, also
        # after the connection is closed (as http.client's own does)
        self.raw = sock.makefile("rb", buffering=0)

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()

    def makefile(self, mode: str) -> io.BufferedReader:  # what http.client.HTTPResponse calls
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wait = self.read_s
        if self.deadline is not None:
            wait = min(wait, self.deadline - time.monotonic())
            if wait <= 0:
                raise late(self.read_s, self.url)
        self.sock.settimeout(wait)
        try:
            return int(self.raw.readinto(buffer))
        except TimeoutError:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise late(self.read_s, self.url) from None
            raise


class _Response(http.client.HTTPResponse):
    """A response read through ``timed``; with ``timed.per_line`` each line of its body (as
    decoded: chunked framing aside) arrives within ``read_s`` of being asked for, so a line
    dripped a byte at a time is cut off, whatever the chunks."""

    def __init__(self, timed: _Timed, method: str | None = None) -> None:
        super().__init__(timed, method=method)  # type: ignore[arg-type]
        self.timed = timed

    def readline(self, limit: int | None = -1) -> bytes:
        timed = self.timed
        if timed.per_line:
            timed.deadline = time.monotonic() + timed.read_s
        return super().readline(-1 if limit is None else limit)


class Connections:
    """Keep-alive connections by origin; ``tls()`` gives the TLS context for https."""

    def __init__(self, tls: Callable[[], Any]) -> None:
        self._tls = tls
        self._idle: dict[tuple[Any, ...], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close every idle connection (at exit)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for conn in connections:
                conn.close()

    @contextlib.contextmanager
    def post(
        self, url: str, headers: dict[str, str], body: bytes, connect_s: float, read_s: float,
        *, whole: bool = True,
    ) -> Iterator[http.client.HTTPResponse]:
        """The response to ``POST url`` (redirects followed); raises what the socket, TLS or
        ``http.client`` raise when no response came, and ``TimedOut`` when the headers did not
        arrive within ``read_s`` of sending (nor the body, for a ``whole`` answer: a stream's
        body then has ``read_s`` for each line: a line dripped a byte at a time is late too)."""
        deadline = time.monotonic() + read_s
        for _ in range(MAX_REDIRECTS + 1):
            origin, target, conn, reused = self._connection(url, connect_s)
            sent = {**proxy_auth(origin[3]), **headers} if origin[0] == "http" and origin[3] else headers
            try:
                response, timed = send(conn, url, target, sent, body, read_s, deadline)
            except _STALE:
                conn.close()
                if not reused:
                    raise
                conn = self._new(origin, connect_s)  # it was closed while idle: once more, anew
                response, timed = send(conn, url, target, sent, body, read_s, deadline)
            except BaseException:
                conn.close()
                raise
            location = response.getheader("location")
            if response.status in (301, 302, 303, 307, 308) and location:
                conn.close()  # its body unread: it may be endless (a new connection costs less)
                moved = urljoin(url, location)
                if response.status not in (307, 308) or urlsplit(moved).scheme not in ("http", "https"):
                    raise redirect_refused(response.status, moved, url)
                if urlsplit(moved)[:2] != urlsplit(url)[:2]:  # another origin gets no credentials
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                url = moved
                continue
            if not whole:
                timed.deadline, timed.per_line = None, True
            try:
                yield response
            except BaseException:
                conn.close()
                raise
            self._done(origin, conn, response)
            return
        raise TooManyRedirects(MAX_REDIRECTS, url)

    def _connection(self, url: str, connect_s: float) -> tuple[Any, str, http.client.HTTPConnection, bool]:
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:  # a bad IPv6 literal, a port out of range
            raise http.client.InvalidURL(str(exc)) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise http.client.InvalidURL(f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
        target = parts.path or "/"
        if parts.query:
            target += f"?{parts.query}"
        proxy = proxy_for(url)
        if proxy is not None and parts.scheme == "http":
            target = f"http://{parts.netloc.rpartition('@')[2]}{target}"  # a proxy takes the whole URL
        origin = (parts.scheme, parts.hostname, port, proxy)
        with self._lock:
            idle = self._idle.get(origin)
            conn = idle.pop() if idle else None
        if conn is not None:
            return origin, target, conn, True
        return origin, target, self._new(origin, connect_s), False

    def _new(self, origin: tuple[Any, ...], connect_s: float) -> http.client.HTTPConnection:
        scheme, host, port, proxy = origin
        conn: http.client.HTTPConnection
        if proxy is None:
            if scheme == "https":
                conn = http.client.HTTPSConnection(host, port, timeout=connect_s, context=self._tls())
            else:
                conn = http.client.HTTPConnection(host, port, timeout=connect_s)
        else:
            via = urlsplit(proxy)
            if scheme == "https":  # a tunnel through the proxy, TLS inside it
                conn = http.client.HTTPSConnection(
                    via.hostname or "", via.port or 80, timeout=connect_s, context=self._tls()
                )
                conn.set_tunnel(host, port, headers=proxy_auth(proxy))
            else:  # the proxy gets the whole URL (and its credentials with each request)
                conn = http.client.HTTPConnection(via.hostname or "", via.port or 80, timeout=connect_s)
        conn.connect()
        return conn

    def _done(self, origin: tuple[Any, ...], conn: http.client.HTTPConnection, response: Any) -> None:
        """Back to the pool if the response was read to its end and the server keeps the
        connection open; closed otherwise."""
        if not response.isclosed() or response.will_close:
            conn.close()
            return
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < _MAX_IDLE:
                idle.append(conn)
                return
        conn.close()


def send(
    conn: http.client.HTTPConnection, url: str, target: str, headers: dict[str, str], body: bytes | None,
    read_s: float, deadline: float, method: str = "POST",
) -> tuple[http.client.HTTPResponse, _Timed]:
    """Send one request on ``conn``; its response (status and headers read) and the reader that
    bounds every later read by ``read_s`` and ``deadline`` (also used by the server probe of
    :mod:`sigform.lm.text_mode`)."""
    if conn.sock is None:
        conn.connect()
    conn.sock.settimeout(read_s)
    timed = _Timed(conn.sock, url, read_s, deadline)
    conn.response_class = lambda sock, method=None: _Response(timed, method=method)  # type: ignore[assignment]
    conn.request(method, target, body=body, headers=headers)
    return conn.getresponse(), timed


def late(seconds: float, url: str) -> TimedOut:
    """The error of an answer (its headers, or all of it) that took longer than ``seconds``."""
    return TimedOut(f"the answer did not arrive within {seconds:g}s", url)


def proxy_for(url: str) -> str | None:
    """The proxy URL for ``url`` from the environment, None for a direct connection (both routes
    ask here: aiohttp's own lookup costs two thread hops per request)."""
    names = _SCHEME_PROXY_VARIABLES.get(url.partition("://")[0].lower(), _PROXY_VARIABLES)
    for name in names:
        if name in os.environ:
            break
    else:
        return None  # the common case: no proxy variable, nothing imported
    import urllib.request

    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    bypass = [entry.strip().lstrip(".").lower() for entry in proxies.get("no", "").split(",")]
    bypass = [entry for entry in bypass if entry]
    host = (parts.hostname or "").lower()
    if "*" in bypass or any(host == entry or host.endswith(f".{entry}") for entry in bypass):
        return None
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return None if not proxy else proxy if "://" in proxy else f"http://{proxy}"


def proxy_auth(proxy: str) -> dict[str, str]:
    """The ``Proxy-Authorization`` header for credentials in the proxy's URL."""
    via = urlsplit(proxy)
    if via.username is None:
        return {}
    pair = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
    return {"Proxy-Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
