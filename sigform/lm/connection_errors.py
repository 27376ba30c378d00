"""Describe a failure to reach an endpoint: which URL, and what the operating system said.

The fast path reports every such failure as :class:`~sigform.lm.wire.Unreachable`, the openai
SDK as ``Connection error.``, and litellm re-raises it as an ``InternalServerError`` with HTTP
status 500 although no response ever came. The real cause is further down the exception chain
(``httpx.ConnectError`` -> ``ConnectionRefusedError``, ``socket.gaierror``, ``ssl.SSLError``); this
module finds it without importing httpx, aiohttp or litellm.
"""

from __future__ import annotations

from dataclasses import dataclass

from sigform.lm.credentials import split_url
from sigform.probes import probe

_MAX_DEPTH = 12
# httpx's transport errors that mean no response arrived (by name: httpx is not imported)
_NO_RESPONSE = frozenset({"ConnectError", "RemoteProtocolError", "ReadError", "Unreachable"})
# the server closed the connection without answering (httpx's and aiohttp's names)
_CLOSED = frozenset({"RemoteProtocolError", "ReadError", "ServerDisconnectedError", "ClientPayloadError"})


@dataclass(frozen=True)
class ConnectionFailure:
    """What went wrong (``"connection refused"``, ...), the OS's own words, and the URL."""

    what: str
    detail: str
    url: str | None

    def describe(self) -> str:
        where = f" {self.url}" if self.url else " the endpoint"
        detail = f" ({self.detail})" if self.detail and self.detail != self.what else ""
        return f"could not reach{where}: {self.what}{detail}"


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(out) < _MAX_DEPTH and all(current is not e for e in out):
        out.append(current)
        nxt = current.__cause__ or current.__context__ or getattr(current, "original_exception", None)
        current = nxt if isinstance(nxt, BaseException) else None
    return out


def _safe_url(link: BaseException) -> str | None:
    """The URL a failed request went to (the fast path's ``url``, the SDK's and httpx's
    ``request.url``) without user info, query or fragment (they may hold credentials)."""
    url = getattr(link, "url", None)
    request = getattr(link, "request", None)
    if not isinstance(url, str) and request is not None:
        url = probe("URL of a failed request", lambda: str(request.url), None)  # httpx raises without one
    return shown_url(url) if isinstance(url, str) and url else None


def shown_url(url: str) -> str | None:
    """``url`` as an error may show it: no user info, query or fragment (they may hold
    credentials); None for a URL that cannot be read."""
    try:
        parts = split_url(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port out of range, a bad IPv6 literal: shown without a URL, not raised
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # an IPv6 literal
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _classify(error: OSError) -> str:
    import socket
    import ssl

    if isinstance(error, (ssl.SSLError, ssl.CertificateError)):
        return "the TLS handshake failed (is it http rather than https, or an untrusted certificate?)"
    if isinstance(error, socket.gaierror):
        return "the host name could not be resolved (DNS)"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(error, ConnectionResetError):
        return "the connection was reset"
    return "the connection failed"


def connection_failure(exc: BaseException) -> ConnectionFailure | None:
    """The connection failure behind ``exc``; None when the chain holds none (a response arrived,
    or it is a timeout, which has its own error)."""
    import socket  # only on the error path
    import ssl

    chain = _chain(exc)
    names = {cls.__name__ for link in chain for cls in type(link).__mro__}
    if any("Timeout" in name for name in names):
        return None
    # the deepest request is the one sent (litellm's wrapper carries a stand-in for api.openai.com)
    urls = (_safe_url(link) for link in reversed(chain))
    url = next((u for u in urls if u is not None), None)
    for link in chain:
        if isinstance(link.__cause__, OSError) and isinstance(link, OSError) and link.__cause__ in chain:
            continue  # a wrapper (aiohttp's connector errors): what it wraps says more
        if isinstance(link, OSError) and not _is_http_error(link):
            what = _classify(link)
            # the OS's words where they add to ours (refused and DNS say it all)
            plain = isinstance(link, (ConnectionRefusedError, socket.gaierror))
            detail = str(link) if isinstance(link, ssl.SSLError) else link.strerror or str(link)
            detail = "" if plain else detail
            return ConnectionFailure(what, detail, url)
    if names & _CLOSED:
        return ConnectionFailure("the server closed the connection without answering", "", url)
    if names & _NO_RESPONSE or "APIConnectionError" in names:
        return ConnectionFailure("the connection failed", "", url)
    return None


def _is_http_error(error: OSError) -> bool:
    # urllib's HTTPError subclasses OSError but carries a real response
    return getattr(error, "code", None) is not None and hasattr(error, "headers")
