"""One LM request as data, and its cache identity.

A :class:`Request` holds everything a backend needs to send one chat-completions request. The
api key is kept as a :class:`~sigform.lm.credentials.Credential` and resolved only when the
request is sent, so it never reaches a cache key, a repr or the history.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sigform.lm.credentials import Credential, is_secret_name, secret_header_values, url_secrets
from sigform.message import Message

__all__ = ["Request", "cache_key", "credential_identity", "normalise", "response_format_dict"]



@dataclass
class Request:
    """A chat-completions request: ``model`` is the name sent to the backend (e.g. ``openai/x``)."""

    model: str
    provider: str
    messages: list[Message]
    params: dict[str, Any]
    api_base: str | None = None
    api_key: Credential | None = None
    connection: dict[str, Credential] = field(default_factory=dict)  # api_version, organization ...
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None

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
        """A copy asking for ``n`` candidates (``None`` removes the setting)."""
        params = dict(self.params)
        if n is None or n == 1:
            params.pop("n", None)
        else:
            params["n"] = n
        return Request(
            self.model,
            self.provider,
            self.messages,
            params,
            self.api_base,
            self.api_key,
            self.connection,
            self.headers,
            self.timeout,
        )


def normalise(value: Any) -> Any:
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


def credential_identity(request: Request) -> bytes:
    """Who is asking and how, as bytes to fingerprint (never stored as is): the resolved api key
    (or, without one, the provider's keys in the environment, which the provider library would
    send), every connection setting (``organization``, ``project`` ...) and every header. Raises
    :class:`~sigform.lm.credentials.CredentialError` when a credential cannot be resolved."""
    if request.api_key is not None:
        key: Any = request.api_key.get()
    else:
        prefixes = (f"{request.provider.upper()}_", "OPENAI_API_KEY")
        key = {k: v for k, v in os.environ.items() if k.startswith(prefixes) and is_secret_name(k)}
    identity = {
        "key": key if isinstance(key, (str, dict)) else repr(key),
        "connection": {name: str(cred.get()) for name, cred in sorted(request.connection.items())},
        "headers": sorted((str(k).lower(), str(v)) for k, v in request.headers.items()),
    }
    return json.dumps(identity, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def cache_key(request: Request, endpoint: str = "chat", *, rollout_id: Any = None) -> str:
    """The full request identity as a hex digest: model, provider, api_base, messages and every
    parameter, normalised, plus the program's ``rollout_id`` (attempt number; not sent). Never
    the api key, headers, timeout or retry settings: the cache scopes this digest with a keyed
    fingerprint of :func:`credential_identity` (:func:`sigform.lm.cache.scoped_key`)."""
    identity = {
        "endpoint": endpoint,
        "model": request.model,
        "provider": request.provider,
        "api_base": (request.api_base or "").rstrip("/"),
        "messages": normalise(request.messages),
        "params": normalise(request.params),
    }
    if rollout_id is not None:
        identity["rollout_id"] = normalise(rollout_id)
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def response_format_dict(fmt: Any) -> Any:
    """A pydantic model class as an OpenAI ``json_schema`` response format; dicts unchanged."""
    if isinstance(fmt, type) and hasattr(fmt, "model_json_schema"):
        return {
            "type": "json_schema",
            "json_schema": {"name": fmt.__name__, "schema": fmt.model_json_schema(), "strict": False},
        }
    return fmt
