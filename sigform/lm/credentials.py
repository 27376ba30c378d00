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

import os
import re
import shlex
import subprocess
import threading
from typing import Any, cast

from sigform.errors import LMError

__all__ = ["CMD_TIMEOUT", "Credential", "CredentialError", "is_secret_name", "resolve_value", "scrub"]

CMD_TIMEOUT = 30.0
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_SECRET_SUFFIXES = ("api_key", "_key", "_token", "_secret", "password", "_credentials", "secret_access_key")


class CredentialError(LMError):
    """A credential or connection setting could not be resolved (the value itself is never shown).

    An :class:`~sigform.errors.LMError` (the call could not be made), never retried."""


# request parameters whose names look like secrets but are not (OpenAI's cache routing key)
_NOT_SECRET = frozenset({"prompt_cache_key"})


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

    def __init__(self, name: str, value: Any, *, secret: bool | None = None, timeout: float = CMD_TIMEOUT):
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
        elif isinstance(value, str) and value.startswith("env:"):
            self.kind, self.source = "env", value[4:].strip()
            if not self.source:
                raise CredentialError(f"{name}: 'env:' needs a variable name")
        elif isinstance(value, str) and value.startswith("cmd:"):
            self.kind, self.source = "cmd", value[4:].strip()
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
            try:
                value = self._value()
            except Exception as exc:
                raise CredentialError(
                    f"{self.name}: the callable {self.source!r} raised {type(exc).__name__}"
                ) from None
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
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, check=False)
        except FileNotFoundError:
            raise CredentialError(f"{self.name}: command `{self.source}` not found") from None
        except subprocess.TimeoutExpired:
            raise CredentialError(
                f"{self.name}: command `{self.source}` timed out after {self.timeout:g}s"
            ) from None
        except OSError as exc:
            raise CredentialError(
                f"{self.name}: command `{self.source}` failed to start ({exc.strerror})"
            ) from None
        if proc.returncode != 0:
            # stderr may echo the secret, so it is not shown
            raise CredentialError(
                f"{self.name}: command `{self.source}` exited with status {proc.returncode} (output hidden)"
            )
        out = proc.stdout.strip()
        if not out:
            raise CredentialError(f"{self.name}: command `{self.source}` printed nothing")
        return out

    def describe(self) -> str:
        """Where the value comes from, safe to print: ``env:NAME``, ``cmd:...``, ``***``."""
        if self.kind == "env":
            return f"env:{self.source}"
        if self.kind == "cmd":
            return f"cmd:{self.source}"
        if self.kind == "callable":
            return f"<callable {self.source}>"
        return "***" if self.secret else repr(self._value)

    def state(self) -> str | None:
        """What a saved program may store: the reference (env/cmd), a non-secret literal, or None."""
        if self.kind in ("env", "cmd"):
            return f"{self.kind}:{self.source}"
        if self.kind == "literal" and not self.secret:
            return self._value
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
        """Resolved secret values already in memory (for scrubbing), without resolving anything."""
        if not self.secret:
            return []
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


def scrub(text: str, secrets: list[str] | tuple[str, ...] | set[str]) -> str:
    """Replace every secret (and its long prefixes, as providers echo masked keys) by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
            if len(s) >= 12:  # providers echo keys truncated: "sk-abcd****wxyz"
                text = text.replace(s[:8], "***")
    return text


def resolve_value(value: Any) -> Any:
    """A Credential's value, or ``value`` itself."""
    return value.get() if isinstance(value, Credential) else value
