"""The openai SDK clients the fast path makes, all sharing one TLS context.

Every httpx2 client the SDK makes builds its own TLS context and loads the CA certificates into
it (tens of milliseconds on a quiet machine, several times that on a busy one): on the critical
path of a fresh process's first call, and again for every event loop's async client. The
context is the one the SDK's clients would build (``httpx2.create_ssl_context()``: the CA file
or directory from ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, else the system's), built once per
process and per value of those variables, and shared: an ``SSLContext`` is safe to use from many
clients and threads. Apart from the context, the clients are the SDK's defaults (timeout,
connection limits, redirects followed); async ones use the SDK's aiohttp transport.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from sigform.probes import probe

__all__ = ["async_client", "shared_tls_context", "sync_client"]

_lock = threading.Lock()
_contexts: dict[tuple[str | None, str | None], Any] = {}


def shared_tls_context() -> Any:
    """The process's TLS context for the current ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _contexts.get(key)
    if context is None:
        with _lock:  # concurrent first clients build it once
            context = _contexts.get(key)
            if context is None:
                import httpx2

                context = _contexts[key] = httpx2.create_ssl_context()
    return context


def sync_client(**options: Any) -> Any:
    """``openai.OpenAI(**options)`` over the SDK's default HTTP client with the shared context."""
    import openai

    return openai.OpenAI(http_client=openai.DefaultHttpxClient(verify=shared_tls_context()), **options)


def async_client(**options: Any) -> Any:
    """``openai.AsyncOpenAI(**options)`` over the SDK's aiohttp transport (the SDK's default httpx
    transport when aiohttp is missing) with the shared context.

    httpx's async connection pool rescans every connection on each request, which costs far
    more than the request itself at 64+ concurrent calls; aiohttp's pool does not."""
    import openai

    context = shared_tls_context()
    # None when aiohttp is missing: the SDK's default httpx transport
    http_client = probe(
        "the OpenAI SDK's aiohttp transport", lambda: openai.DefaultAioHttpClient(verify=context), None
    )
    if http_client is None:
        http_client = openai.DefaultAsyncHttpxClient(verify=context)
    return openai.AsyncOpenAI(http_client=http_client, **options)
