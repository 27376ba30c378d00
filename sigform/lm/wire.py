"""The OpenAI-compatible wire format of the fast path (:mod:`sigform.lm.transport`): one request as
it goes out (URL, headers, JSON body), the server-sent-event lines of a stream, and the errors a
request that got no completion raises."""

from __future__ import annotations

import base64
import json
import os
from typing import Any
from urllib.parse import unquote

from sigform import jsonvalue
from sigform.lm.connection_errors import shown_url
from sigform.lm.credentials import memoised_by_url, split_url
from sigform.lm.request import Request
from sigform.lm.response import chunk_not_json

# model prefixes whose endpoints speak the OpenAI chat-completions protocol
FAST_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "local", "openai_like"})
_PLACEHOLDER_KEY = "sk-no-key-required"  # OpenAI-compatible local servers ignore the key
_DEFAULT_BASES = {"lm_studio": "http://localhost:1234/v1", "llamafile": "http://127.0.0.1:8080/v1"}
_OPENAI_API = "https://api.openai.com/v1"
# the body's encoder, made once: json.dumps with options builds a new one for every call
_BODY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class TransportError(Exception):
    """A request that got no completion; ``url`` is where it went (shown without credentials).
    Never seen by users: the LM maps it (:mod:`sigform.lm.errors_map`)."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.message = message
        self.url = url


class Unreachable(TransportError):
    """No answer came: the connection failed, or the server closed it (the cause says which)."""


class TimedOut(TransportError, TimeoutError):
    """No answer within the timeout."""


class Redirected(TransportError):
    """A redirect that is not followed: the message says where it led and why."""


class TooManyRedirects(Redirected):
    """Each answer was a redirect, ``hops`` of them (a loop, or a misconfigured server)."""

    def __init__(self, hops: int, url: str) -> None:
        where = shown_url(url) or "the endpoint"
        what = f"redirected the request more than {hops} times (a redirect loop? check api_base)"
        super().__init__(f"{where} {what}", url)


class StatusError(TransportError):
    """The server answered with an error status; ``body`` is its JSON error object (or text)."""

    def __init__(self, status_code: int, headers: Any, raw: bytes, url: str) -> None:
        text = raw.decode("utf-8", "replace").strip()
        try:
            body: Any = jsonvalue.loads(text)
        except ValueError:
            body = text or None
        super().__init__(f"Error code: {status_code} - {body if body is not None else ''}", url)
        self.status_code = status_code
        self.headers = headers
        self.body = body.get("error", body) if isinstance(body, dict) else body


class StreamError(TransportError):
    """The server sent an ``error`` event in the middle of a stream."""

    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(message if isinstance(message, str) else str(error), "")
        self.body = error


def redirect_refused(status: int, location: str, url: str) -> Redirected:
    """The error of a redirect that cannot carry the request on: one to a URL that is not
    http(s), or a 301/302/303, after which a client sends a GET without the body (its answer
    would be the answer to no prompt). 307 and 308 keep the POST and are followed."""
    where, to = shown_url(url) or "the endpoint", shown_url(location) or "a URL that cannot be read"
    if split_url(location).scheme not in ("http", "https") or status in (307, 308):
        return Redirected(f"{where} redirected the request to {to}, not http(s): check api_base", url)
    return Redirected(
        f"{where} answered HTTP {status}, a redirect to {to}; a request is sent again only on 307 or 308, "
        "which keep it a POST with its body: check api_base",
        url,
    )


def request_model_name(model: str) -> str:
    """The model name the server sees: the provider prefix removed (``openai/x`` -> ``x``)."""
    prefix, sep, rest = model.partition("/")
    return rest if sep and prefix in FAST_PROVIDERS else model


@memoised_by_url  # asked on every keyless request (local servers)
def _openai_host(url: str) -> bool:
    try:
        return split_url(url).hostname == "api.openai.com"  # not urlsplit: its memo keeps the URL
    except ValueError:  # a malformed URL ("http://[::1/v1") is the request's to report, with the model
        return False


def is_openai_api(req: Request, base: str | None) -> bool:
    """Whether ``req`` goes to OpenAI's own API (the default endpoint, or named)."""
    if base is None:
        if req.provider != "openai":
            return False
        base = os.environ.get("OPENAI_BASE_URL") or _OPENAI_API
    return _openai_host(base)


class Outgoing:
    """One request as it goes on the wire: URL, headers, body and timeout."""

    __slots__ = ("content", "headers", "timeout", "url")

    def __init__(self, req: Request, stream: bool = False) -> None:
        base = req.api_base or _DEFAULT_BASES.get(req.provider)
        key = req.api_key.get() if req.api_key is not None else None
        if not key and req.provider == "openai":
            key = os.environ.get("OPENAI_API_KEY")
        if not key and is_openai_api(req, base):
            from sigform.lm.errors_map import missing_key_error

            # the placeholder is for local servers: OpenAI's own API would refuse it with an
            # "incorrect API key sk-no-k..." 401 that hides what to set
            raise missing_key_error(req.model)
        if base is None:
            base = (os.environ.get("OPENAI_BASE_URL") if req.provider == "openai" else None) or _OPENAI_API
        headers = {
            "Authorization": f"Bearer {key or _PLACEHOLDER_KEY}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": "sigform",
        }
        for name, header in (("organization", "OpenAI-Organization"), ("project", "OpenAI-Project")):
            cred = req.connection.get(name)
            value = cred.get() if cred is not None else None
            if value is not None:
                headers[header] = str(value)
        url = f"{base.rstrip('/')}/"
        scheme, at, rest = url.partition("://")
        userinfo, sep, host = rest.partition("@")
        if sep and "/" not in userinfo:  # credentials in the URL: HTTP basic auth, as httpx sent
            user, _, password = userinfo.partition(":")
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"
            url = f"{scheme}{at}{host}"  # and never in a library's error message
        headers.update(req.headers)
        prompt = getattr(req, "prompt", None)  # a text completion (see the module docstring)
        body: dict[str, Any] = {"model": request_model_name(req.model)}
        if prompt is None:
            body["messages"] = req.messages
        else:
            body["prompt"] = prompt
        body.update(req.params)
        if stream:
            body["stream"] = True
            body.setdefault("stream_options", {"include_usage": True})
        self.url = url + ("chat/completions" if prompt is None else "completions")
        self.headers = headers
        self.content = _BODY_ENCODER.encode(body).encode("utf-8")
        self.timeout = req.timeout


DONE: Any = object()


def chunk_of(line: str) -> Any:
    """The chunk a server-sent line carries: a dict, None for other lines (comments, event names,
    blank separators), ``DONE`` for ``data: [DONE]``."""
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if data == "[DONE]":
        return DONE
    try:
        chunk = jsonvalue.loads(data)
    except json.JSONDecodeError as exc:
        raise chunk_not_json(exc) from None
    if isinstance(chunk, dict) and chunk.get("error"):
        raise StreamError(chunk["error"])
    return chunk
