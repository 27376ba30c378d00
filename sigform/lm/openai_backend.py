"""The OpenAI-compatible fast path: the same chat-completions request through the openai SDK.

A text-completion request (``Request.prompt`` set, for a model without a chat template) goes to
``/completions`` the SDK's public way (``client.post``); the per-client template below is the
chat endpoint's.

Used for OpenAI-compatible endpoints (``openai/...`` with an ``api_base``, ``hosted_vllm/...``,
``lm_studio/...``, the embedded local model) so that a call never imports litellm. One client is
kept per endpoint and credential *origin* (the env var, command, callable or literal the key comes
from) - per event loop for the async client, since connection pools are bound to their loop - so
connections are pooled. A rotated key replaces its origin's client; the replaced client is closed
once no request is using it, as is the least recently used one beyond ``MAX_CLIENTS``. Sync
clients are closed at interpreter exit, async ones when their loop shuts down. The SDK's own
retries are off: sigform owns the retry policy. Responses are read as plain JSON (no pydantic model per call).

Non-streamed calls skip the SDK's per-request machinery (option models copied twice, headers
merged, the URL parsed, on every call): the SDK builds one template request per client - URL,
headers, timeout - and each call sends a copy with its own body through the SDK's HTTP client,
raising the SDK's own exceptions for failures. Should the SDK's internals ever differ, the
template is not built and calls go through ``client.post`` as before. Async calls hand that
request straight to the SDK's aiohttp session where httpx2's wrappers around it do nothing
(see :mod:`sigform.lm.sdk_session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

from sigform import runtime
from sigform.lm.client_pool import ClientPool, Lease
from sigform.lm.credentials import memoised_by_url, split_url
from sigform.lm.errors_map import missing_key_error
from sigform.lm.request import Request
from sigform.lm.response import chunk_not_json, parse_body
from sigform.lm.sdk_clients import async_client, sync_client
from sigform.lm.sdk_session import session_post
from sigform.probes import probe

__all__ = ["FAST_PROVIDERS", "MAX_CLIENTS", "OpenAIBackend", "request_model_name"]

# model prefixes whose endpoints speak the OpenAI chat-completions protocol
FAST_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "local", "openai_like"})
_PLACEHOLDER_KEY = "sk-no-key-required"  # OpenAI-compatible local servers ignore the key
MAX_CLIENTS = 32  # clients kept per process (and per event loop for async), least recently used out
_DEFAULT_BASES = {"lm_studio": "http://localhost:1234/v1", "llamafile": "http://127.0.0.1:8080/v1"}


def request_model_name(model: str) -> str:
    """The model name the server sees: the provider prefix removed (``openai/x`` -> ``x``)."""
    prefix, sep, rest = model.partition("/")
    return rest if sep and prefix in FAST_PROVIDERS else model


# a request's client slot, resolved identity, endpoint, key and extra client arguments
_Identity = tuple[tuple[Any, ...], tuple[Any, ...], str | None, str, dict[str, Any]]


def _base(req: Request) -> str | None:
    return req.api_base or _DEFAULT_BASES.get(req.provider)


def _is_openai_api(req: Request, base: str | None) -> bool:
    """Whether ``req`` goes to OpenAI's own API (the SDK's default endpoint, or named)."""
    if base is None:
        if req.provider != "openai":
            return False
        # the SDK sends to OPENAI_BASE_URL when it is set (a local server that needs no key)
        base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return _openai_host(base)


@memoised_by_url  # asked on every keyless request (local servers)
def _openai_host(url: str) -> bool:
    try:
        return split_url(url).hostname == "api.openai.com"  # not urlsplit: its memo keeps the URL
    except ValueError:  # a malformed URL ("http://[::1/v1") is the request's to report, with the model
        return False


def _organization(req: Request) -> list[tuple[str, Any]]:
    """The request's ``organization`` / ``project`` credentials that are set."""
    found = ((name, req.connection.get(name)) for name in ("organization", "project"))
    return [(name, cred) for name, cred in found if cred is not None]


def _origins(req: Request) -> list[tuple[str, Any]]:
    return [(name, cred.origin()) for name, cred in _organization(req)]


def _known_slot(req: Request) -> tuple[Any, ...]:
    """The request's client slot as far as it is known without resolving a credential (a key
    that resolves to nothing falls back to ``OPENAI_API_KEY`` and another slot: then a client is
    made that need not be, never the other way round)."""
    if req.api_key is not None:
        origin = req.api_key.origin()
    else:
        origin = ("env", "OPENAI_API_KEY") if req.provider == "openai" else ("none",)
    return (_base(req), origin, *_origins(req))


class OpenAIBackend:
    """Sends :class:`Request` objects through ``openai.OpenAI`` / ``openai.AsyncOpenAI``."""

    name = "openai-sdk"

    def __init__(self) -> None:
        self._sync = ClientPool(MAX_CLIENTS)
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientPool] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._sync_in_flight = 0  # sync requests being sent (more than one: the I/O loop sends)
        self._count_lock = threading.Lock()
        runtime.on_exit(functools.partial(_close_sync_at_exit, weakref.ref(self)))
        runtime.forget_after_fork(self)

    def _after_fork(self) -> None:
        """Start again with no client and no held lock (in a forked child). The child holds its
        parent's keep-alive connections: requests sent on one socket by both processes get each
        other's responses (a child read another child's answer as its own). The parent's clients
        are kept unclosed (closing one could end the parent's TLS session), used by no pool."""
        _inherited.append([self._sync, self._async])
        self._sync = ClientPool(MAX_CLIENTS)
        self._async = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._sync_in_flight = 0

    # -- clients ---------------------------------------------------------------------------

    @staticmethod
    def _identity(req: Request) -> _Identity:
        """The request's client slot (endpoint and credential origins), its resolved identity
        (endpoint and credential values), and the values the client is made with."""
        if req.api_key is not None:
            key, origin = req.api_key.get(), req.api_key.origin()
        else:
            key, origin = None, ("none",)
        if not key and req.provider == "openai":
            key, origin = os.environ.get("OPENAI_API_KEY"), ("env", "OPENAI_API_KEY")
        base = _base(req)
        if not key and _is_openai_api(req, base):
            # the placeholder is for local servers: OpenAI's own API would refuse it with an
            # "incorrect API key sk-no-k..." 401 that hides what to set
            raise missing_key_error(req.model)
        extra = {name: cred.get() for name, cred in _organization(req)}
        key = key or _PLACEHOLDER_KEY
        slot = (base, origin, *_origins(req))
        ident = (base, key, *sorted(extra.items()))
        return slot, ident, base, key, extra

    def _lease(self, req: Request) -> Lease:
        slot, ident, base, key, extra = self._identity(req)

        def make() -> Any:
            return sync_client(api_key=key, base_url=base, max_retries=0, **extra)

        lease, done = self._sync.acquire(slot, ident, make)
        for client in done:
            _close_sync(client)
        return lease

    def _release(self, lease: Lease) -> None:
        done = self._sync.release(lease)
        if done is not None:
            _close_sync(done)

    async def _alease(self, req: Request, identity: _Identity | None = None) -> tuple[ClientPool, Lease]:
        slot, ident, base, key, extra = identity or self._identity(req)
        loop = asyncio.get_running_loop()
        pool = self._async.get(loop)
        if pool is None:
            with self._lock:
                pool = self._async.get(loop)
                if pool is None:
                    pool = self._async[loop] = ClientPool(MAX_CLIENTS)
                    fresh = True
                else:
                    fresh = False
            if fresh:
                # closes this loop's clients when the loop shuts down its async generators
                # (asyncio.run does), so no connection or session is left unclosed
                closer = _close_at_loop_shutdown(pool)
                await closer.__anext__()
                pool.keepalive = closer  # the loop holds only a weak reference to it

        def make() -> Any:
            return async_client(api_key=key, base_url=base, max_retries=0, **extra)

        lease, done = pool.acquire(slot, ident, make)
        for client in done:
            await _close_async(client)
        return pool, lease

    @staticmethod
    async def _arelease(pool: ClientPool, lease: Lease) -> None:
        done = pool.release(lease)
        if done is not None:
            await _close_async(done)

    # -- before a rate limiter's slot --------------------------------------------------------

    def prepare(self, req: Request) -> None:
        """Make the clients ``req`` may be sent with before it books a rate limiter's slot: the
        sync client, and the I/O loop's async one that sends sync requests made while another is
        in flight. A cold client (the SDK's import, a TLS context, a session, the request
        template) made after the slot would send the request late, together with the next slot's
        (see :mod:`sigform.lm.rate_limit`). Warm clients cost a lookup."""
        slot = _known_slot(req)
        if not self._sync.holds(slot):
            lease = self._lease(req)
            _direct_for(lease.client)
            self._release(lease)
        if not runtime.in_loop():
            pool = self._async.get(runtime.loop())
            if pool is None or not pool.holds(slot):
                runtime.run(self.aprepare(req))

    async def aprepare(self, req: Request) -> None:
        """:meth:`prepare` for an async request: this loop's client."""
        pool = self._async.get(asyncio.get_running_loop())
        if pool is not None and pool.holds(_known_slot(req)):
            return
        pool, lease = await self._alease(req)
        _direct_for(lease.client)
        await self._arelease(pool, lease)

    # -- calls -----------------------------------------------------------------------------

    @staticmethod
    def _body(req: Request, stream: bool = False) -> dict[str, Any]:
        if req.prompt is not None:  # a text completion
            body = {"model": request_model_name(req.model), "prompt": req.prompt, **req.params}
        else:
            body = {"model": request_model_name(req.model), "messages": req.messages, **req.params}
        if stream:
            body["stream"] = True
            body.setdefault("stream_options", {"include_usage": True})
        return body

    @staticmethod
    def _options(req: Request) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if req.headers:
            opts["headers"] = req.headers
        if req.timeout is not None:
            opts["timeout"] = req.timeout
        return opts

    def complete(self, req: Request) -> tuple[dict[str, Any], float | None]:
        """Send ``req``; return the JSON body and the cost (unknown here: None). While another
        sync request is in flight, the process's I/O loop sends it the async way (see
        :mod:`sigform.runtime`); credentials are resolved here, in the caller's thread."""
        with self._count_lock:
            self._sync_in_flight += 1
            crowded = self._sync_in_flight > 1
        try:
            if crowded and not runtime.in_loop():
                return runtime.run(self.acomplete(req, self._identity(req)))
            return self._complete_sync(req)
        finally:
            with self._count_lock:
                self._sync_in_flight -= 1

    def _complete_sync(self, req: Request) -> tuple[dict[str, Any], float | None]:
        lease = self._lease(req)
        try:
            client = lease.client
            # the request template is the chat endpoint's: text completions take the SDK's way
            direct = _direct_for(client) if req.prompt is None else None
            if direct is None:
                import httpx2

                response = client.post(
                    _path(req), body=self._body(req), cast_to=httpx2.Response,
                    options=self._options(req),
                )
                return parse_body(response.content), None
            request = direct.request(self._body(req), req.headers, req.timeout)
            try:
                response = client._client.send(request)
            except direct.request_errors as err:
                error, cause = direct.failure(err, request)
                raise error from cause
            return direct.result(client, response), None
        finally:
            self._release(lease)

    async def acomplete(
        self, req: Request, identity: _Identity | None = None
    ) -> tuple[dict[str, Any], float | None]:
        pool, lease = await self._alease(req, identity)
        try:
            client = lease.client
            direct = _direct_for(client) if req.prompt is None else None
            if direct is None:
                import httpx2

                response = await client.post(
                    _path(req), body=self._body(req), cast_to=httpx2.Response,
                    options=self._options(req),
                )
                return parse_body(response.content), None
            body = self._body(req)
            if direct.session is not None and direct.session.ready():
                data = await direct.apost(client, body, req.headers, req.timeout)
                if data is not None:
                    return data, None
            request = direct.request(body, req.headers, req.timeout)
            try:
                response = await client._client.send(request)
            except direct.request_errors as err:
                error, cause = direct.failure(err, request)
                raise error from cause
            if response.status_code >= 400:
                await response.aread()
            return direct.result(client, response), None
        finally:
            await self._arelease(pool, lease)

    def stream(self, req: Request) -> Iterator[dict[str, Any]]:
        """Chunk dicts of a streamed response."""
        import openai

        lease = self._lease(req)
        try:
            stream = lease.client.post(
                _path(req),
                body=self._body(req, stream=True),
                cast_to=dict,
                options=self._options(req),
                stream=True,
                stream_cls=openai.Stream[dict[str, Any]],
            )
            try:
                yield from stream
            except json.JSONDecodeError as exc:
                raise chunk_not_json(exc) from None
            finally:
                stream.close()
        finally:
            self._release(lease)

    async def astream(self, req: Request) -> AsyncIterator[dict[str, Any]]:
        import openai

        pool, lease = await self._alease(req)
        try:
            stream = await lease.client.post(
                _path(req),
                body=self._body(req, stream=True),
                cast_to=dict,
                options=self._options(req),
                stream=True,
                stream_cls=openai.AsyncStream[dict[str, Any]],
            )
            try:
                async for chunk in stream:
                    yield chunk
            except json.JSONDecodeError as exc:
                raise chunk_not_json(exc) from None
            finally:
                await stream.close()
        finally:
            await self._arelease(pool, lease)


def _path(req: Request) -> str:
    """The endpoint ``req`` goes to: chat completions, or text completions for a prompt."""
    return "/chat/completions" if req.prompt is None else "/completions"


class _Direct:
    """One SDK client's chat-completions request, built once by the SDK itself: the URL, the
    headers (auth, user agent, ...) and the default timeout. Each call copies it with its body."""

    __slots__ = (
        "connection_error",
        "connection_failures",
        "extensions",
        "headers",
        "httpx",
        "request_errors",
        "session",
        "timeout_error",
        "timeout_errors",
        "url",
    )

    def __init__(self, client: Any) -> None:
        import httpx2
        import openai
        from openai._httpx2 import request_exceptions, timeout_exceptions
        from openai._models import FinalRequestOptions

        options = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data={})
        template = client._build_request(options)
        if not callable(getattr(client, "_make_status_error_from_response", None)):
            raise AttributeError("_make_status_error_from_response")
        self.httpx = httpx2
        self.url = template.url
        # everything but the body's length is the same on every call (host included)
        self.headers = httpx2.Headers(
            [(k, v) for k, v in template.headers.raw if k.lower() != b"content-length"], encoding="ascii"
        )
        self.extensions = dict(template.extensions)
        self.timeout_errors = timeout_exceptions()
        self.request_errors = request_exceptions()
        self.timeout_error = openai.APITimeoutError
        self.connection_error = openai.APIConnectionError
        is_async = isinstance(client, openai.AsyncOpenAI)
        self.connection_failures = _aiohttp_connection_errors() if is_async else ()
        # async clients: the same request straight over the SDK's aiohttp session, where it can
        self.session = (
            session_post(client._client, self.url, self.headers, self.extensions.get("timeout", {}))
            if is_async
            else None
        )

    def failure(self, err: Exception, request: Any) -> tuple[Exception, BaseException]:
        """The SDK's exception for a request that got no response, and the error it comes from.

        The SDK's aiohttp transport reports every aiohttp connection error as httpx's
        ``ConnectTimeout`` (a refused connection, a server that hung up): what it wraps tells
        a real timeout from a connection that failed."""
        if not isinstance(err, self.timeout_errors):
            return self.connection_error(request=request), err
        cause = err.__cause__
        if isinstance(cause, self.connection_failures) and not isinstance(cause, asyncio.TimeoutError):
            return self.connection_error(request=request), cause
        return self.timeout_error(request=request), err

    @staticmethod
    def content(body: dict[str, Any]) -> bytes:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def apost(
        self, client: Any, body: dict[str, Any], headers: dict[str, str], timeout: float | None
    ) -> dict[str, Any] | None:
        """The JSON body of the request sent over the SDK's aiohttp session; None for a redirect
        (the caller resends it the SDK's way). Failures raise the SDK's exceptions."""
        assert self.session is not None
        limits = None if timeout is None else self.httpx.Timeout(timeout).as_dict()
        try:
            got = await self.session.post(self.content(body), headers, limits)
        except self.request_errors as err:
            error, cause = self.failure(err, self.request(body, headers, timeout))
            raise error from cause
        if got is None:
            return None
        data, response = got
        if response is not None and response.status_code >= 400:
            response.request = self.request(body, headers, timeout)
            raise client._make_status_error_from_response(response)
        return parse_body(data)  # an HTML page or `[]` is a malformed response

    def request(self, body: dict[str, Any], headers: dict[str, str], timeout: float | None) -> Any:
        content = self.content(body)
        httpx = self.httpx
        merged = httpx.Headers(self.headers, encoding="ascii")  # header values are ASCII
        if headers:
            merged.update(headers)
        merged["content-length"] = str(len(content))
        extensions = self.extensions
        if timeout is not None:
            extensions = {**extensions, "timeout": httpx.Timeout(timeout).as_dict()}
        # a body given as a stream: httpx adds no headers of its own (they are all here already)
        request = httpx.Request(
            "POST", self.url, headers=merged, stream=httpx.ByteStream(content), extensions=extensions
        )
        request.headers.encoding = "ascii"
        request.read()
        return request

    @staticmethod
    def result(client: Any, response: Any) -> dict[str, Any]:
        if response.status_code >= 400:
            raise client._make_status_error_from_response(response)
        return parse_body(response.content)  # an HTML page or `[]` is a malformed response


def _aiohttp_connection_errors() -> tuple[type[BaseException], ...]:
    try:
        import aiohttp
    except ImportError:  # no aiohttp transport
        return ()
    return (aiohttp.ClientConnectionError,)


_directs: weakref.WeakKeyDictionary[Any, _Direct | None] = weakref.WeakKeyDictionary()


def _direct_for(client: Any) -> _Direct | None:
    """The client's request template (None: the SDK's internals differ; use ``client.post``)."""
    try:
        return _directs[client]
    except KeyError:
        pass
    # None: an SDK whose internals moved; the public path still works
    direct: _Direct | None = probe("the OpenAI SDK's request template", lambda: _Direct(client), None)
    _directs[client] = direct
    return direct


async def _close_at_loop_shutdown(pool: ClientPool) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for client in pool.drain():
            await _close_async(client)


async def _close_async(client: Any) -> None:
    with contextlib.suppress(Exception):  # a client whose transport already went away
        await client.close()


def _close_sync(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.close()


def _close_sync_at_exit(ref: weakref.ReferenceType[OpenAIBackend]) -> None:
    backend = ref()
    if backend is not None:
        for client in backend._sync.drain():
            _close_sync(client)


_backend: OpenAIBackend | None = None
_inherited: list[Any] = []  # a forked child's copies of its parent's pools: never used, never closed


def get_backend() -> OpenAIBackend:
    """The process-wide fast-path backend (its client pools are shared by every LM)."""
    global _backend
    if _backend is None:
        _backend = OpenAIBackend()
    return _backend
