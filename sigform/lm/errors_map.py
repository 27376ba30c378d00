"""Map the fast path's and litellm's exceptions onto sigform's one error hierarchy.

litellm's exceptions subclass the openai SDK's; the fast path's (:mod:`sigform.lm.transport`)
carry the same attributes (``status_code``, ``body``, ``message``, headers). The mapping works
from status codes and class names so that it never has to import litellm. The provider's
message is kept (with secrets scrubbed) on ``LMError.provider_message``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from sigform.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowError,
    LMError,
    LMTimeoutError,
    ProviderError,
    RateLimitError,
)
from sigform.lm.connection_errors import connection_failure
from sigform.lm.credentials import scrub
from sigform.lm.response import MalformedResponseError, chunk_not_json, chunk_unreadable
from sigform.probes import probe

_CONTEXT_HINTS = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "context length",
    "prompt is too long",
    "too many tokens",
    "input is too long",
    "exceeds the context",
)
_AUTH_HINTS = (
    "missing credentials",
    "no api key",
    "api key not found",
    "invalid api key",
    "incorrect api key",
)
# no key was sent at all: litellm's and the SDK's own checks before sending ("Missing Anthropic
# API Key - ... no key is set", "Missing Gemini API key", "Missing credentials", ...)
_MISSING_KEY = re.compile(
    r"missing credentials|no api key|api key not found|api_key client option must be set"
    r"|missing (?:[\w-]+ ){0,3}api key|no key is set"
)
_WRAPPED_MODULES = ("openai", "litellm", "httpx", "httpx2", "httpcore", "anyio")
# a pydantic/FastAPI request-validation failure naming a request location, as text
# ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), ...")
_VALIDATION_TEXT = re.compile(r"\bvalidation errors?\b", re.IGNORECASE)
_REQUEST_LOC = re.compile(r"""['"]loc['"]\s*:\s*[(\[]\s*['"](?:body|query)['"]""")
# Gemini/Vertex put the wait in the error body: details[{"@type": ...RetryInfo, "retryDelay": "7s"}]
_RETRY_DELAY = re.compile(r"""["']retryDelay["']\s*:\s*["'](\d+(?:\.\d+)?)s["']""")


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def _headers_of(exc: BaseException) -> list[Mapping[str, str]]:
    """Every set of response headers the exception carries: the SDK's ``response.headers`` and
    litellm's ``litellm_response_headers`` (litellm often attaches an empty stand-in response and
    keeps the provider's real headers only there)."""
    found: list[Mapping[str, str]] = []
    for headers in (getattr(exc, "headers", None), getattr(getattr(exc, "response", None), "headers", None)):
        if headers and isinstance(headers, Mapping):
            found.append(headers)
    extra = getattr(exc, "litellm_response_headers", None)
    if extra:
        try:
            found.append(extra if isinstance(extra, Mapping) else dict(extra))
        except (TypeError, ValueError):
            pass
    return found


def retry_after_of(exc: BaseException, text: str = "") -> float | None:
    """The provider's requested wait: a Retry-After header wherever the exception keeps it, else a
    ``retryDelay`` in the error body (Gemini), else None."""
    for headers in _headers_of(exc):
        value = parse_retry_after(headers)
        if value is not None:
            return value
    body = getattr(exc, "body", None)
    for source in (text, str(body) if body is not None else "", getattr(exc, "message", None)):
        if isinstance(source, str) and source:
            match = _RETRY_DELAY.search(source)
            if match:
                return float(match.group(1))
    return None


def _provider_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, Mapping) else None
        if isinstance(message, str):
            return message
        if isinstance(err, str):
            return err
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc) or type(exc).__name__


def _error_code(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            return str(err.get("code") or err.get("type") or "")
    return str(getattr(exc, "code", "") or "")


def _is_request_validation(exc: BaseException, text: str) -> bool:
    """Whether the error says the request's parameters failed the server's validation: a
    pydantic/FastAPI validation error about the request body or query. Some servers (llama.cpp's
    on an unsupported ``response_format``) send it as HTTP 500; it is a bad request all the same,
    and sending it again cannot succeed."""
    body = getattr(exc, "body", None)
    detail = body.get("detail") if isinstance(body, Mapping) else None
    if isinstance(detail, list) and detail and all(_body_loc(d) for d in detail):
        return True
    for source in (text, str(body) if body is not None else ""):
        if source and _VALIDATION_TEXT.search(source) and _REQUEST_LOC.search(source):
            return True
    return False


def _body_loc(item: Any) -> bool:
    loc = item.get("loc") if isinstance(item, Mapping) else None
    return isinstance(loc, (list, tuple)) and len(loc) > 0 and loc[0] in ("body", "query")


def _wrappable(exc: BaseException) -> bool:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    return any(
        cls.__module__.split(".")[0] in _WRAPPED_MODULES or cls.__name__ == "TransportError"
        for cls in type(exc).__mro__
    )


# what litellm's stream reader raised when it could not read a chunk: it reports these as an
# APIConnectionError ("could not reach the provider"), though the provider answered
_CHUNK_READ_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def _unreadable_stream(exc: BaseException) -> BaseException | None:
    """For litellm's ``APIConnectionError`` (inside its ``MidStreamFallbackError``) that wraps a
    failure to read a streamed chunk: a :class:`MalformedResponseError` saying what was seen
    (with the chunk's text when it was not JSON), or the ``openai.APIError`` of an ``error``
    event. ``None`` for anything else (a real connection failure keeps its own mapping)."""
    original = getattr(exc, "original_exception", None)
    if "MidStreamFallbackError" not in {c.__name__ for c in type(exc).__mro__} or not isinstance(
        original, BaseException
    ):
        return None
    exc = original
    if "APIConnectionError" not in {c.__name__ for c in type(exc).__mro__}:
        return None
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        kinds = {c.__name__ for c in type(cause).__mro__}
        if kinds & {"ConnectError", "ReadError", "RemoteProtocolError", "TimeoutException", "OSError"}:
            return None  # a transport failure
        if isinstance(cause, json.JSONDecodeError):
            return chunk_not_json(cause)
        if "APIError" in kinds and cause.__module__.split(".")[0] == "openai":
            return cause  # the provider sent an `error` event: its message says what went wrong
        if isinstance(cause, _CHUNK_READ_ERRORS) or "ValidationError" in kinds:
            return chunk_unreadable(cause)
        cause = cause.__cause__ or cause.__context__
    return None


def _key_environment(model: str) -> dict[str, Any] | None:
    """litellm's reading of ``model``'s key variables (``validate_environment``), when litellm is
    already imported (this is the error path: never import it for this), else None."""
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return None
    found: Any = probe("litellm's key variables", lambda: litellm.validate_environment(model=model), None)
    return found if isinstance(found, dict) else None


def _key_advice(model: str, environment: dict[str, Any] | None) -> str:
    """Which setting gives ``model`` its key, said once (the provider's own wording, which often
    lists every way the library could authenticate, stays on ``provider_message``)."""
    names: list[str] = []
    if environment is not None:
        names = [n for n in environment.get("missing_keys") or () if isinstance(n, str)]
    elif sys.modules.get("litellm") is None and model.partition("/")[0] in ("openai", model):
        names = ["OPENAI_API_KEY"]
    if len(names) == 1:
        where = f"set {names[0]} in the environment"
    elif names:
        where = f"set the provider's key in the environment (litellm looks for {', '.join(names)})"
    else:
        where = "set the provider's key in the environment"
    return f"{where} or pass api_key=... to sf.LM(...)"


def _had_key(model: str, secrets: list[str], environment: dict[str, Any] | None) -> bool:
    """Whether the request had a key (its own, or the provider's variable is set): then a
    "missing API key" text is the server's complaint about the key it got (a proxy that wants
    another header), not a setting to make, and the usual status rules apply."""
    if secrets:
        return True
    if sys.modules.get("litellm") is not None:
        return environment is not None and environment.get("keys_in_environment") is True
    return model.partition("/")[0] in ("openai", model) and bool(os.environ.get("OPENAI_API_KEY"))


def missing_key_error(
    model: str, environment: dict[str, Any] | None = None, **kw: Any
) -> AuthenticationError:
    """The error for a request that found no API key, naming the setting to make
    (``environment``: :func:`_key_environment`'s answer, when the caller already has it)."""
    if environment is None:
        environment = _key_environment(model)
    return AuthenticationError(
        f"{model}: no API key was found: {_key_advice(model, environment)}", model=model, **kw
    )


_SHOWN = 2000  # characters of the provider's error text in an error's message


def map_exception(exc: BaseException, *, model: str, secrets: Iterable[str] = ()) -> BaseException:
    """The sigform :class:`LMError` for ``exc``; exceptions that are not API failures (bugs,
    cancellations) are returned unchanged so they propagate as they are."""
    if not isinstance(exc, MalformedResponseError) and _wrappable(exc):
        exc = _unreadable_stream(exc) or exc
    if isinstance(exc, MalformedResponseError):  # a 200 that is no completion: retried like a 5xx
        what = scrub(str(exc), list(secrets))
        raw = scrub(exc.raw, list(secrets)) if exc.raw else None
        return ProviderError(
            f"{model}: the provider sent a malformed response: {what}",
            model=model,
            provider_message=raw or what,
        )
    if isinstance(exc, LMError) or not _wrappable(exc):
        return exc
    original = getattr(exc, "original_exception", None)
    if "MidStreamFallbackError" in {c.__name__ for c in type(exc).__mro__} and (
        isinstance(original, Exception) and _wrappable(original)
    ):
        exc = original  # litellm's stream wrapper: the provider's own error says what happened
    secrets = list(secrets)
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        status = status if isinstance(status, int) else None
    provider_msg = scrub(_provider_message(exc), secrets)
    low = provider_msg.lower()
    code = _error_code(exc).lower()
    kw: dict[str, Any] = {"model": model, "provider_message": provider_msg, "status_code": status}

    def msg(what: str) -> str:
        head = f"{model}: {what}" + (f" (HTTP {status})" if status else "")
        if len(provider_msg) <= _SHOWN:
            return f"{head}: {provider_msg}"
        # an error page of megabytes would be the message of every retry and log line
        more = f"({len(provider_msg):,} characters; all in .provider_message)"
        return f"{head}: {provider_msg[:_SHOWN]} ... {more}"

    err: LMError
    if "ContextWindowExceededError" in names or (
        (status in (400, 413, None) or "BadRequestError" in names)
        and (code == "context_length_exceeded" or any(h in low for h in _CONTEXT_HINTS))
        and "APIConnectionError" not in names
    ):
        err = ContextWindowError(msg("the request does not fit the context window"), **kw)
    elif (
        "APITimeoutError" in names
        or "Timeout" in names
        or isinstance(exc, (TimeoutError, asyncio.TimeoutError))
    ):
        err = LMTimeoutError(msg("the request timed out"), **kw)
    elif "Redirected" in names:  # the fast path's: the message says where
        kw["status_code"] = None
        err = ProviderError(f"{model}: {provider_msg}", **kw)
        err.retryable = False  # sent again, it loops again
    elif _MISSING_KEY.search(low) and not _had_key(
        model, secrets, environment := _key_environment(model)
    ):
        # before the connection checks: litellm reports some missing keys as connection errors
        # (with a stand-in api.openai.com URL) or as HTTP 500/401, although nothing was sent
        if status not in (401, 403):
            kw["status_code"] = None
        err = missing_key_error(environment=environment, **kw)
    elif (failure := connection_failure(exc)) is not None:
        # no response came: no HTTP status either (litellm reports one as HTTP 500)
        kw["status_code"] = None
        err = ProviderError(f"{model}: {scrub(failure.describe(), secrets)}", **kw)
    elif (
        "APIConnectionError" in names
        or "Unreachable" in names
        or isinstance(exc, ConnectionError)
        or (
            status is None
            and ("ConnectError" in names or "RemoteProtocolError" in names or "ReadError" in names)
        )
    ):
        err = ProviderError(msg("could not reach the provider"), **kw)
    elif (
        status in (401, 403)
        or "AuthenticationError" in names
        or "PermissionDeniedError" in names
        or any(h in low for h in _AUTH_HINTS)
    ):
        err = AuthenticationError(msg("the provider rejected the credentials"), **kw)
    elif status == 429 or "RateLimitError" in names:
        err = RateLimitError(msg("rate limited"), retry_after=retry_after_of(exc, provider_msg), **kw)
        if code == "insufficient_quota":
            err.retryable = False  # waiting does not add credit
    elif status == 408:
        err = LMTimeoutError(msg("the provider timed out"), **kw)
    elif status is not None and status >= 400 and _is_request_validation(exc, provider_msg):
        err = BadRequestError(msg("the server rejected the request's parameters"), **kw)
    elif status is not None and (status >= 500 or status == 409):
        err = ProviderError(msg("the provider failed"), **kw)
        if isinstance(err, ProviderError):
            err.retry_after = retry_after_of(exc, provider_msg)  # type: ignore[attr-defined]
    elif (status is not None and 400 <= status < 500) or "BadRequestError" in names:
        err = BadRequestError(msg("the provider rejected the request"), **kw)
    else:
        err = ProviderError(msg(f"the call failed ({type(exc).__name__})"), **kw)
        err.retryable = False  # unknown failure: do not hammer the provider
    err.__cause__ = None
    return err
