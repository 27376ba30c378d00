"""Credentials and connection settings given as literals, env-var names, commands or callables.

Resolution rule for a string value (documented for users):

1. ``"env:NAME"``: the value of environment variable ``NAME`` (an error if it is unset).
2. ``"cmd:<command>"``: the stripped stdout of ``<command>``, split with :func:`shlex.split`
   and run *without* a shell, with a timeout; the result is cached for the life of the LM.
   A failure raises an error that shows the command but never its output.
3. An all-caps identifier (``OPENAI_API_KEY``) that exists in ``os.environ``: that variable.
4. Anything else: the literal value.

A callable is called (without arguments) each time the value is needed, so it may refresh
tokens. Secret values never appear in a repr, a log line, the history, a cache key, a saved
program or an error message: :class:`Credential` prints only where the value comes from.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import SplitResult, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

from sigform.errors import CredentialError

__all__ = [
    "CMD_TIMEOUT",
    "CONNECTION_SETTINGS",
    "Credential",
    "CredentialError",
    "is_secret_header",
    "is_secret_name",
    "memoised_by_url",
    "redact_url",
    "resolve_value",
    "scrub",
    "secret_header_values",
    "split_url",
    "strip_url_credentials",
    "url_credential_parts",
    "url_secrets",
]

T = TypeVar("T")

# connection settings: resolved like credentials and kept out of the request parameters
CONNECTION_SETTINGS = frozenset(
    {
        "api_version",
        "organization",
        "project",
        "base_url",
        "deployment_id",
        "region_name",
        "aws_region_name",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_profile_name",
        "vertex_project",
        "vertex_location",
        "vertex_credentials",
    }
)

CMD_TIMEOUT = 30.0
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_SECRET_SUFFIXES = ("api_key", "_key", "_token", "_secret", "password", "_credentials", "secret_access_key")


# request parameters whose names look like secrets but are not (OpenAI's cache routing key)
_NOT_SECRET = frozenset({"prompt_cache_key"})


@functools.lru_cache(maxsize=512)
def is_secret_name(name: str) -> bool:
    """True for setting names whose values are secrets (``api_key``, ``*_token``, ...)."""
    low = name.lower()
    return low not in _NOT_SECRET and (low in ("api_key", "key", "token") or low.endswith(_SECRET_SUFFIXES))


class Credential:
    """A lazily resolved setting value that knows where it came from.

    ``kind`` is ``"literal"``, ``"env"``, ``"cmd"`` or ``"callable"``; ``source`` the env-var
    name or command (never the secret). ``secret`` controls whether reprs may show the value.
    """

    __slots__ = ("_cached", "_lock", "_value", "kind", "name", "secret", "source", "timeout")
    kind: str  # "literal", "env", "cmd" or "callable"
    source: str | None  # the variable name, command or function name; None for a literal

    def __init__(self, name: str, value: object, *, secret: bool | None = None, timeout: float = CMD_TIMEOUT):
        self.name = name
        self.secret = is_secret_name(name) if secret is None else secret
        self.timeout = timeout
        self._cached: str | None = None
        self._lock = threading.Lock()
        self._value: Any = None
        if isinstance(value, Credential):
            self.kind, self.source, self._value = value.kind, value.source, value._value
            self._cached = value._cached if value.kind == "cmd" else None
        elif callable(value):
            self.kind, self.source, self._value = "callable", getattr(value, "__name__", "callable"), value
        # a reference read from a config file may keep a blank before it (" env:KEY"): it was sent
        # as a literal key; saved programs and sigform.ray already read it as a reference
        elif isinstance(value, str) and value.lstrip().startswith("env:"):
            self.kind, self.source = "env", value.lstrip()[4:].strip()
            if not self.source:
                raise CredentialError(f"{name}: 'env:' needs a variable name")
        elif isinstance(value, str) and value.lstrip().startswith("cmd:"):
            self.kind, self.source = "cmd", value.lstrip()[4:].strip()
            if not self.source:
                raise CredentialError(f"{name}: 'cmd:' needs a command")
        elif isinstance(value, str) and _ENV_NAME.match(value) and value in os.environ:
            self.kind, self.source = "env", value
        else:
            self.kind, self.source, self._value = "literal", None, value

    def get(self) -> Any:
        """The resolved value (runs the command once, reads the variable each time)."""
        if self.kind == "literal":
            return self._value
        if self.kind == "env":
            try:
                return os.environ[cast(str, self.source)]  # an env credential always names one
            except KeyError:
                raise CredentialError(f"{self.name}: environment variable {self.source} is not set") from None
        if self.kind == "callable":
            failure: str | None = None
            try:
                value = self._value()
            except Exception as exc:  # its message may quote the secret: only the type is kept
                failure = type(exc).__name__
            if failure is not None:  # raised outside the except block: no __context__ to leak
                raise CredentialError(f"{self.name}: the callable {self.source!r} raised {failure}")
            if self.secret and isinstance(value, str):
                self._cached = value  # the latest value, so that errors echoing it can be scrubbed
            return value
        with self._lock:
            if self._cached is None:
                self._cached = self._run()
            return self._cached

    def _run(self) -> str:
        try:
            argv = shlex.split(self.source)
        except ValueError as exc:
            raise CredentialError(f"{self.name}: cannot parse command `{self.source}`: {exc}") from None
        # failures are raised outside the except blocks: a timeout keeps the partial output (maybe
        # the secret) on the exception, which would otherwise stay reachable as __context__
        failure: str | None = None
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, check=False)
        except FileNotFoundError:
            failure = "not found"
        except subprocess.TimeoutExpired:
            failure = f"timed out after {self.timeout:g}s"
        except OSError as exc:
            failure = f"failed to start ({exc.strerror})"
        if failure is not None:
            raise CredentialError(f"{self.name}: command `{self.source}` {failure}")
        if proc.returncode != 0:
            # stderr may echo the secret, so it is not shown
            raise CredentialError(
                f"{self.name}: command `{self.source}` exited with status {proc.returncode} (output hidden)"
            )
        out = proc.stdout.strip()
        if not out:
            raise CredentialError(f"{self.name}: command `{self.source}` printed nothing")
        return out

    @classmethod
    def literal(cls, name: str, value: object, *, secret: bool | None = None) -> Credential:
        """A setting that is exactly ``value``: never read as ``env:``/``cmd:`` or as the name of
        an environment variable (for values from untrusted places, such as a saved program)."""
        cred = cls(name, None, secret=secret)
        cred._value = value
        return cred

    def describe(self) -> str:
        """Where the value comes from, safe to print: ``env:NAME``, ``cmd:...``, ``***`` (a URL
        literal with its credentials masked)."""
        if self.kind == "env":
            return f"env:{self.source}"
        if self.kind == "cmd":
            return f"cmd:{self.source}"
        if self.kind == "callable":
            return f"<callable {self.source}>"
        if self.secret:
            return "***"
        return repr(redact_url(self._value) if isinstance(self._value, str) else self._value)

    def state(self) -> str | None:
        """What a saved program may store: a non-secret literal (a URL without its credentials),
        else None -- never a secret, and never an ``env:``/``cmd:`` reference (a saved file is
        shared data; the credential is the loader's to give)."""
        if self.kind == "literal" and not self.secret:
            return strip_url_credentials(self._value) if isinstance(self._value, str) else self._value
        return None

    def origin(self) -> tuple[Any, ...]:
        """Where the value comes from, as a hashable identity, without resolving it: the same
        variable, command or callable has the same origin whatever value it yields today."""
        if self.kind == "callable":
            return ("callable", id(self._value))
        if self.kind == "literal":
            value = self._value
            hashable = isinstance(value, (str, int, float, bool, type(None)))
            return ("literal", value if hashable else repr(value))
        return (self.kind, self.source)

    def known_values(self) -> list[str]:
        """Resolved secret values already in memory (for scrubbing), without resolving anything;
        for a non-secret URL, the credentials inside it."""
        if not self.secret:
            return url_secrets(self._value) if self.kind == "literal" and isinstance(self._value, str) else []
        if self.kind == "literal" and isinstance(self._value, str):
            return [self._value]
        if self.kind in ("cmd", "callable") and self._cached:
            return [self._cached]
        if self.kind == "env":
            v = os.environ.get(cast(str, self.source))
            return [v] if v else []
        return []

    def __repr__(self) -> str:
        return f"Credential({self.name}={self.describe()})"

    __str__ = __repr__


def _forms(secret: str) -> set[str]:
    """The ways a secret is echoed: as is, URL-encoded, JSON-escaped (``/`` also as ``\\/``)."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    ascii_escaped = json.dumps(secret)[1:-1]
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        escaped,
        ascii_escaped,
        escaped.replace("/", "\\/"),
        ascii_escaped.replace("/", "\\/"),
    }


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret by ``***``: as is, URL-encoded and JSON-escaped, and its long
    prefixes (providers echo keys truncated: ``sk-abcd****wxyz``)."""
    forms: set[str] = set()
    prefixes: set[str] = set()
    for s in secrets:
        if isinstance(s, str) and len(s) >= 4:
            forms |= _forms(s)
            if len(s) >= 12 and not any(c.isspace() for c in s):  # "Bearer x": its token is listed too
                prefixes.add(s[:8])
    for form in sorted(forms, key=len, reverse=True):  # longest first: no half-replaced forms
        text = text.replace(form, "***")
    for prefix in prefixes:
        text = text.replace(prefix, "***")
    return text


# a header whose name says it carries a credential (Authorization, x-api-key, api-key, Cookie ...)
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|passwd|cookie|credential|signature", re.I)
_AUTH_SCHEME = re.compile(r"^\s*[A-Za-z][\w.-]*\s+(\S{4,})\s*$")  # "Bearer <token>", "Basic <b64>"


def is_secret_header(name: str) -> bool:
    """Whether a header with this name carries a credential."""
    return bool(_SECRET_HEADER.search(name))


def secret_header_values(headers: Mapping[str, object] | None) -> list[str]:
    """The credential values of ``headers``: whole values and the token after an auth scheme."""
    out: list[str] = []
    for name, value in (headers or {}).items():
        if isinstance(name, str) and is_secret_header(name) and isinstance(value, str) and value:
            out.append(value)
            match = _AUTH_SCHEME.match(value)
            if match:
                out.append(match.group(1))
    return out


# query parameters that carry credentials (``?key=...``, ``?access_token=...``, ``&sig=...``)
_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|auth|bearer|sig|credential|code", re.I)


def _secret_query_name(name: str) -> bool:
    """True for a query parameter name that carries a credential, as the server reads it:
    percent-decoded first (``%6Bey`` is ``key`` to the server)."""
    return bool(_SECRET_QUERY.search(unquote_plus(name)))


def split_url(url: str) -> SplitResult:
    """``urlsplit(url)``, without the standard library's memo for a URL that may carry
    credentials (user info or a query): Python 3.11+ keeps the last 128 URLs it split, 3.10 the
    last 20, which would keep the secret in memory after its LM is gone."""
    if "@" not in url and "?" not in url:
        return urlsplit(url)
    parts = _split_unmemoised(url)
    if _PLAIN_MEMO is not None:  # Python 3.10: the memo is a dict keyed by the URL; drop such URLs
        for key in list(_PLAIN_MEMO):
            if isinstance(key[0], str) and ("@" in key[0] or "?" in key[0]):
                _PLAIN_MEMO.pop(key, None)
    return parts


_split_unmemoised = getattr(urlsplit, "__wrapped__", urlsplit)
# Python 3.10's urlsplit memo (3.11 made it an lru_cache, whose __wrapped__ skips it)
_PLAIN_MEMO: dict[Any, Any] | None = (
    None if hasattr(urlsplit, "__wrapped__") else getattr(urllib.parse, "_parse_cache", None)
)


def url_secrets(url: str) -> list[str]:
    """The credentials inside a URL: its user info (``user:pass@``) and secret query values."""
    parts = _split_leniently(url)
    out = [v for v in (parts.username, parts.password) if v]
    if parts.username or parts.password:  # as sent: "Authorization: Basic base64(user:pass)"
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        out.append(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    for pair in parts.query.split("&"):
        name, sep, value = pair.partition("=")
        if sep and value and _secret_query_name(name):
            out += dict.fromkeys((value, unquote_plus(value)))  # as written and as the server reads it
    return out


def url_credential_parts(url: str) -> list[str]:
    """Which parts of ``url`` hold credentials, by kind and name only (``"user info"``,
    ``"query parameter api_key"``): what :func:`strip_url_credentials` removes, safe to save."""
    parts = _split_leniently(url)
    out = ["user info"] if parts.username or parts.password else []
    for pair in parts.query.split("&") if parts.query else ():
        name, sep, value = pair.partition("=")
        if sep and value and _secret_query_name(name):
            out.append(f"query parameter {name}" if _PLAIN_NAME.fullmatch(name) else "a query parameter")
    return out


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def _split_leniently(url: str) -> SplitResult:
    """:func:`split_url`, or for a URL it refuses (a bad IPv6 literal: ``http://u:pw@[::1/v1``)
    the generic split of RFC 3986 (appendix B), which never fails: the credentials of a malformed
    URL are found and removed too, rather than the URL being kept whole in reprs, history and
    saved files."""
    try:
        return split_url(url)
    except ValueError:
        found = _URL_PARTS.fullmatch(url)
        assert found is not None  # every string matches
        scheme, netloc, path, query, fragment = (part or "" for part in found.groups())
        return SplitResult(scheme.lower(), netloc, path, query, fragment)


_URL_PARTS = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S)


def _rewrite_url(url: str, replacement: str | None) -> str:
    parts = _split_leniently(url)
    if not url_secrets(url):
        return url
    netloc = parts.netloc.rpartition("@")[2]
    if replacement is not None and (parts.username or parts.password):
        netloc = f"{replacement}@{netloc}"
    query = []
    for pair in parts.query.split("&") if parts.query else ():
        name, sep, value = pair.partition("=")
        if sep and value and _secret_query_name(name):
            if replacement is None:
                continue
            pair = f"{name}={replacement}"
        query.append(pair)
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(query), parts.fragment))


def memoised_by_url(compute: Callable[[str], T]) -> Callable[[str], T]:
    """``compute(url)`` memoised without keeping a URL that may carry credentials: a URL with no
    user info and no query is its own key; any other is keyed by a digest under a random key of
    this process (the digest cannot be checked against guesses without that key), so the URL and
    its secret go with the LM that held them. For per-call answers (history, endpoint keys)."""
    plain: dict[str, T] = {}
    hidden: dict[bytes, T] = {}

    @functools.wraps(compute)
    def memoised(url: str) -> T:
        if "@" not in url and "?" not in url:
            hit = plain.get(url)
            if hit is None:
                hit = _remember(plain, url, compute(url))
            return hit
        digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), key=_MEMO_KEY, digest_size=16).digest()
        hit = hidden.get(digest)
        if hit is None:
            hit = _remember(hidden, digest, compute(url))
        return hit

    return memoised


_MEMO_KEY = os.urandom(32)


def _remember(memo: dict[Any, T], key: object, value: T) -> T:
    if len(memo) >= 64:  # endpoints are few; forget them all rather than grow
        memo.clear()
    memo[key] = value
    return value


@memoised_by_url
def redact_url(url: str) -> str:
    """``url`` with its credentials shown as ``***`` (for reprs, history and messages).
    Memoised (every history entry needs its endpoint's) without keeping the URL's secret."""
    return _rewrite_url(url, "***")


def strip_url_credentials(url: str) -> str:
    """``url`` without its credentials (for saved files: the loader supplies its own)."""
    return _rewrite_url(url, None)


def resolve_value(value: object) -> Any:
    """A Credential's value, or ``value`` itself."""
    return value.get() if isinstance(value, Credential) else value
