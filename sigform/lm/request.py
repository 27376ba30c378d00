"""One LM request as data, and its cache identity.

A :class:`Request` holds everything a backend needs to send one request: a chat-completions
request (``messages``) or, for a model without a chat template, a text-completion request
(``prompt`` set: the document sent to ``/completions``; ``messages`` then keep what it was
written from, for the history). The
api key is kept as a :class:`~sigform.lm.credentials.Credential` and resolved only when the
request is sent, so it never reaches a cache key, a repr or the history.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sigform.lm.credentials import (
    Credential,
    is_secret_name,
    memoised_by_url,
    secret_header_values,
    split_url,
    strip_url_credentials,
    url_secrets,
)
from sigform.message import Message


@dataclass
class Request:
    """A chat-completions request, or a text-completion one when ``prompt`` is set: ``model`` is
    the name sent to the backend (e.g. ``openai/x``)."""

    model: str
    provider: str
    messages: list[Message]
    params: dict[str, Any]
    api_base: str | None = None
    api_key: Credential | None = None
    connection: dict[str, Credential] = field(default_factory=dict)  # api_version, organization ...
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    prompt: str | None = None

    @property
    def endpoint(self) -> str:
        """``"chat"`` (chat completions) or ``"text"`` (text completions of :attr:`prompt`)."""
        return "chat" if self.prompt is None else "text"

    def known_secrets(self) -> list[str]:
        """The secret values of this request's credentials already resolved, for scrubbing error
        text: the key and secret connection settings (a command's or a callable's value is known
        after the first send), credential headers (``Authorization``, ``x-api-key``, ...) and the
        credentials inside ``api_base`` (``user:pass@``, ``?key=``)."""
        out = self.api_key.known_values() if self.api_key is not None else []
        for cred in self.connection.values():
            out += cred.known_values()
        out += secret_header_values(self.headers)
        if self.api_base:
            out += url_secrets(self.api_base)
        return out

    def with_n(self, n: int | None) -> Request:
        """This request asking for ``n`` candidates (``None`` removes the setting): itself when
        that changes nothing, else a copy."""
        if (n is None or n == 1) and "n" not in self.params:
            return self
        params = dict(self.params)
        if n is None or n == 1:
            params.pop("n", None)
        else:
            params["n"] = n
        return replace(self, params=params)


def normalise(value: object) -> Any:
    """A JSON-ready canonical form: integral floats become ints (``0 == 0.0``), tuples lists,
    pydantic models their JSON schema, other objects their repr."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, Mapping):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, type) and hasattr(value, "model_json_schema"):
        return {"pydantic": value.__name__, "schema": normalise(value.model_json_schema())}
    if hasattr(value, "model_dump"):
        return normalise(value.model_dump())
    return repr(value)


@memoised_by_url  # asked on every call
def endpoint_of(url: str) -> str:
    """``url`` as one canonical endpoint: scheme and host in lower case, the host's trailing
    ``.`` (``api.openai.com.``), the default port and a trailing ``/`` dropped, percent-encoded
    unreserved characters decoded (``/v%31`` is ``/v1``) and other escapes in upper case, dot
    segments resolved (``/v1/./`` is ``/v1``), the remaining query sorted, and no credentials
    (user info and secret query values: :func:`credential_identity` holds those, keyed).
    ``.../v1`` and ``.../v1/`` are one endpoint. Names are not resolved: ``localhost`` and
    ``127.0.0.1`` stay two (a name may resolve to ``::1`` or another address; resolving would
    make the identity depend on the resolver and cost a lookup per key)."""
    bare = strip_url_credentials(url.strip())
    try:
        parts = split_url(bare)
        port = parts.port
    except ValueError:  # a port out of range, a bad IPv6 literal: the request reports it
        parts = None
    if parts is None or not parts.scheme or not parts.netloc:  # no URL ("user:pw@host/v1": scheme "user")
        return bare.split("?")[0].rpartition("@")[2].rstrip("/")
    host = _unescape(parts.hostname or "").lower().removesuffix(".")
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if port is not None and port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{port}"
    query = "&".join(sorted(_unescape(pair) for pair in parts.query.split("&") if pair))
    path = _without_dot_segments(_unescape(parts.path)).rstrip("/")
    return f"{parts.scheme}://{host}{path}" + (f"?{query}" if query else "")


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _unescape(text: str) -> str:
    """RFC 3986's percent-encoding normalisation: an escaped unreserved character is the
    character; any other escape is kept, its hex digits in upper case."""
    if "%" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else "%" + m.group(1).upper()

    return _ESCAPE.sub(one, text)


def _without_dot_segments(path: str) -> str:
    """``path`` with ``.`` and ``..`` segments resolved (RFC 3986, 5.2.4): ``/v1/./`` -> ``/v1/``,
    ``/a/../v1`` -> ``/v1``; ``..`` never climbs above the root."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment in (".", ".."):
            if segment == ".." and len(out) > 1:
                out.pop()
            if last:
                out.append("")  # "/v1/." names the folder: "/v1/"
        else:
            out.append(segment)
    return "/".join(out) if out != [""] else "/"


# the environment variables that move a provider's default endpoint: OPENAI_BASE_URL,
# OPENAI_API_BASE, ANTHROPIC_BASE_URL, AZURE_API_BASE, WATSONX_URL, AWS_BEDROCK_RUNTIME_ENDPOINT ...
_ENDPOINT_SUFFIXES = ("_API_BASE", "_BASE_URL", "_URL", "_ENDPOINT")


def _ambient_urls(provider: str) -> dict[str, str]:
    """The settings outside a request that can choose where it goes when it has no
    ``api_base``: the provider's endpoint variables in the environment (and OpenAI's, which
    OpenAI-compatible clients read), and litellm's module-wide ``api_base`` once it is imported."""
    import sys

    prefixes = (f"{provider.upper()}_", "OPENAI_", "AWS_", "LITELLM_")
    found = {
        name: value
        for name, value in os.environ.items()
        if name.startswith(prefixes) and name.endswith(_ENDPOINT_SUFFIXES) and value.strip()
    }
    litellm = sys.modules.get("litellm")
    base = getattr(litellm, "api_base", None) if litellm is not None else None
    if isinstance(base, str) and base.strip():
        found["litellm.api_base"] = base
    return found


def endpoint_identity(provider: str, api_base: str | None) -> str:
    """Where a request goes, as the one text that cache keys and rate-limit buckets use: its
    ``api_base`` by :func:`endpoint_of`, or without one the provider's default as the environment
    may move it (``OPENAI_BASE_URL``, ...). Never a credential."""
    if api_base:
        return endpoint_of(api_base)
    ambient = sorted((name, endpoint_of(url)) for name, url in _ambient_urls(provider).items())
    return "default" + "".join(f" {name}={url}" for name, url in ambient)


def credential_identity(request: Request) -> bytes:
    """Who is asking and how, as bytes to fingerprint (never stored as is): the resolved api key
    (or, without one, the provider's keys in the environment, which the provider library would
    send), every connection setting (``organization``, ``project`` ...) and every header. Raises
    :class:`~sigform.lm.credentials.CredentialError` when a credential cannot be resolved."""
    if request.api_key is not None:
        key: object = request.api_key.get()
    else:
        prefixes = (f"{request.provider.upper()}_", "OPENAI_API_KEY")
        key = {k: v for k, v in os.environ.items() if k.startswith(prefixes) and is_secret_name(k)}
    identity = {
        "key": key if isinstance(key, (str, dict)) else repr(key),
        "connection": {name: str(cred.get()) for name, cred in sorted(request.connection.items())},
        "headers": sorted((str(k).lower(), str(v)) for k, v in request.headers.items()),
        # the endpoint's user info and ?key= values, which endpoint_identity leaves out
        "url": sorted(secret for url in _endpoint_urls(request) for secret in url_secrets(url)),
    }
    return json.dumps(identity, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _endpoint_urls(request: Request) -> list[str]:
    return [request.api_base] if request.api_base else list(_ambient_urls(request.provider).values())


def cache_key(request: Request, endpoint: str | None = None, *, rollout_id: object = None) -> str:
    """The full request identity as a hex digest: the API (chat or text completions; the
    request's own unless given), model, provider, the effective endpoint
    (:func:`endpoint_identity`: the api_base, or the environment's for the provider's default),
    messages (or prompt) and every parameter, normalised, plus the program's ``rollout_id``
    (attempt number; not sent). Never the api key, headers, timeout or retry settings: the cache
    scopes this digest with a keyed fingerprint of :func:`credential_identity`
    (:func:`sigform.lm.cache.scoped_key`)."""
    identity = {
        "endpoint": endpoint or request.endpoint,
        "model": request.model,
        "provider": request.provider,
        "api_base": endpoint_identity(request.provider, request.api_base),
        "messages": normalise(request.messages),
        "params": normalise(request.params),
    }
    if request.prompt is not None:
        identity["prompt"] = request.prompt
    if rollout_id is not None:
        identity["rollout_id"] = normalise(rollout_id)
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def response_format_dict(fmt: object) -> Any:
    """A pydantic model class as an OpenAI ``json_schema`` response format; dicts unchanged."""
    if isinstance(fmt, type) and hasattr(fmt, "model_json_schema"):
        return {
            "type": "json_schema",
            "json_schema": {"name": fmt.__name__, "schema": fmt.model_json_schema(), "strict": False},
        }
    return fmt
