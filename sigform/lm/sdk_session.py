"""Async fast-path requests handed straight to the openai SDK's aiohttp session.

The SDK's aiohttp client (``openai.DefaultAioHttpClient``) is an httpx2 client whose transport
forwards every httpx2 request to an aiohttp session and wraps the answer in an httpx2 response.
For a plain chat-completions POST those wrappers (the client's auth, redirect and hook loops,
the request and response models, the byte-stream adapters) cost about as much CPU as aiohttp
itself: at 64 concurrent calls against a local server, ~90 of ~220 µs per request.

:class:`SessionPost` sends the SDK-built request (URL, headers, timeout: see
``openai_backend._Direct``) through that same session with the transport's own arguments, maps
aiohttp's exceptions with the transport's own mapping, and decodes a compressed body with
httpx2's decoders, so a caller sees what the wrapped route gives: the body, or the SDK's
exceptions. It is used only where the wrappers do nothing for the request: the transport is the
SDK's aiohttp one (no proxy, no unix socket), the client has no auth, event hooks or mounts for
the URL, and its session exists (the first request went the SDK's way). A redirect is answered
``None``: the caller resends it the SDK's way, which follows it.
"""

from __future__ import annotations

import functools
from typing import Any

from sigform.probes import probe

__all__ = ["SessionPost", "session_post"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class SessionPost:
    """POSTs to one URL of one SDK client over its aiohttp session."""

    __slots__ = ("_aiohttp", "_headers", "_httpx", "_map_errors", "_timeout", "_transport", "_url")

    def __init__(self, http_client: Any, url: Any, headers: Any, timeout: dict[str, Any]) -> None:
        import aiohttp
        import httpx2
        import yarl
        from multidict import CIMultiDict
        from openai._vendor.httpx_aiohttp.transport import AiohttpTransport, map_aiohttp_exceptions

        transport = http_client._transport
        if not isinstance(transport, AiohttpTransport) or transport.proxy is not None or transport.uds:
            raise LookupError("not the SDK's plain aiohttp transport")
        if http_client._transport_for_url(url) is not transport:
            raise LookupError("the URL is mounted on another transport (a proxy)")
        if http_client.auth is not None or any(http_client.event_hooks.values()):
            raise LookupError("the client has auth or event hooks")
        self._transport = transport
        self._aiohttp = aiohttp
        self._httpx = httpx2
        self._map_errors = map_aiohttp_exceptions
        self._url = yarl.URL(str(url), encoded=True)
        self._headers = CIMultiDict((k.decode("ascii"), v.decode("latin-1")) for k, v in headers.raw)
        self._timeout = self.client_timeout(timeout)

    def client_timeout(self, timeout: dict[str, Any]) -> Any:
        """The transport's reading of an httpx2 timeout dict (``Timeout(...).as_dict()``)."""
        return self._aiohttp.ClientTimeout(
            sock_connect=timeout.get("connect"), sock_read=timeout.get("read"), connect=timeout.get("pool")
        )

    def ready(self) -> bool:
        """Whether the transport's session exists (the transport makes it on its first request)."""
        return isinstance(self._transport.client, self._aiohttp.ClientSession)

    async def post(
        self, content: bytes, headers: dict[str, str], timeout: dict[str, Any] | None
    ) -> tuple[bytes, Any] | None:
        """The decoded body, and the httpx2 response when one was needed (a compressed body, or
        an error status for the SDK's status errors); None for a redirect (resend it the SDK's
        way, which follows it). Failures raise the httpx2 exceptions the transport raises."""
        merged = self._headers
        if headers:
            merged = merged.copy()
            merged.update(headers)
        with self._map_errors():
            async with self._transport.client.request(
                "POST",
                self._url,
                headers=merged,
                data=content,
                allow_redirects=False,
                auto_decompress=False,
                compress=False,
                timeout=self._timeout if timeout is None else self.client_timeout(timeout),
            ) as response:
                status = response.status
                if status in _REDIRECTS and "Location" in response.headers:
                    return None
                data = await response.read()
                if status < 400 and "Content-Encoding" not in response.headers:
                    return data, None
                raw = response.raw_headers
        # decoded as the wrapped route does: by httpx2, from the headers
        wrapped = self._httpx.Response(status, headers=raw, stream=self._httpx.ByteStream(data))
        return wrapped.read(), wrapped

def session_post(http_client: Any, url: Any, headers: Any, timeout: dict[str, Any]) -> SessionPost | None:
    """A :class:`SessionPost` for the client, or None where its wrappers matter (or differ)."""
    # None: another transport, or SDK internals that moved; the wrapped route then
    build = functools.partial(SessionPost, http_client, url, headers, timeout)
    return probe("the OpenAI SDK's aiohttp session", build, None)
