"""Every error sigform raises on purpose, in one place.

Everything derives from :class:`SigformError`, so callers can catch one type. Parse errors carry
what the LM actually wrote (``raw``) so nothing is lost, and every message is written to be read
by a person: which field, what was expected, what was seen. Secrets never appear here: LM errors
carry the provider's message, never request headers, and an error raised while a credential is
being resolved never chains the exception it replaces (see :mod:`sigform.lm.credentials`).

The hierarchy (a second base class lets ``except ValueError`` / ``except TypeError`` work too)::

    SigformError
    ├── SignatureError (TypeError) ......... a malformed signature: names, types, no outputs
    ├── InputError (TypeError) ............. a program called with missing/unknown/bad inputs
    │   └── ParameterError (ValueError) .... a request setting with an invalid value
    ├── ParseError ......................... LM output not turned into typed values
    │   ├── StructureError ................. the answer format was not followed
    │   └── FieldValueError ................ a field found, its value does not validate
    ├── JSONTextError (ValueError) ......... text holds no single readable JSON value
    ├── ToolError .......................... a tool defined or used wrongly
    │   ├── ToolArgumentsError ............. a tool call's arguments do not fit its schema
    │   └── MCPServerError ................. an MCP server did not start, answer or stay up
    ├── BatchError ......................... too many examples of a batch failed
    ├── ProgramStateError (ValueError) ..... saved state that does not fit the program
    ├── CheckpointError (ValueError) ....... a batch checkpoint file that cannot be used
    ├── MetricValueError (TypeError) ....... a metric returned neither bool nor number
    ├── RequestVetoed ...................... a callback's on_request stopped the call
    ├── CacheEntryError (ValueError) ....... a stored cache value is no valid entry (a miss)
    ├── MalformedResponseError (ValueError)  an HTTP 200 body that is not a chat completion
    ├── ScriptError ........................ the scripted test LM cannot answer a call
    ├── NoSuchField (KeyError) ............. ``example[key]`` for a field it does not hold
    ├── NotRegularFile (OSError) ........... a data file's path names a FIFO, device or folder
    ├── FileLocked (OSError) ............... another process holds a data file's write lock
    └── LMError ............................ a language-model call failed
        ├── AuthenticationError ............ credentials rejected (never retried)
        ├── CredentialError ................ a credential could not be resolved (never retried)
        ├── RateLimitError ................. slow down (retried, honouring Retry-After)
        ├── ContextWindowError ............. the request does not fit the window
        ├── BadRequestError ................ malformed or unsupported request (never retried)
        ├── LMTimeoutError ................. the call timed out (retried)
        ├── ProviderError .................. 5xx or connection failure (retried)
        └── LocalModelError ................ the embedded model could not be used

:class:`FieldError` is not an exception: one failing field (name, expected type, what was seen,
why), listed by :class:`ParseError` and :class:`ToolArgumentsError`. Warnings (``UserWarning``
subclasses such as ``ParameterWarning`` or ``CacheWarning``) stay beside the code that warns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sigform.excerpt import shorten

if TYPE_CHECKING:
    from sigform.predict.batch import Failure

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BatchError",
    "CacheEntryError",
    "CheckpointError",
    "ContextWindowError",
    "CredentialError",
    "FieldError",
    "FieldValueError",
    "FileLocked",
    "InputError",
    "JSONTextError",
    "LMError",
    "LMTimeoutError",
    "LocalModelError",
    "MCPServerError",
    "MalformedResponseError",
    "MetricValueError",
    "NoSuchField",
    "NotRegularFile",
    "ParameterError",
    "ParseError",
    "ProgramStateError",
    "ProviderError",
    "RateLimitError",
    "RequestVetoed",
    "ScriptError",
    "SigformError",
    "SignatureError",
    "StructureError",
    "ToolArgumentsError",
    "ToolError",
]


class SigformError(Exception):
    """Base class of every error sigform raises on purpose."""


class NotRegularFile(SigformError, OSError):
    """A data file's path (a checkpoint, the cache secret, a state file) names something other
    than a regular file: a FIFO, a device or a folder (see :mod:`sigform.files`)."""


class FileLocked(SigformError, OSError):
    """Another open file holds a data file's write lock; ``holder`` is its process id when the OS
    says (see :func:`sigform.files.lock_exclusive`)."""

    def __init__(self, path: str, holder: int | None, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder


class NoSuchField(SigformError, KeyError):
    """``record[key]`` for a key an Example or Prediction does not hold; the message names its
    fields and the closest one (built only when shown: a missing key is often expected)."""

    def __init__(self, owner: str, key: object, fields: tuple[str, ...]) -> None:
        super().__init__(key)
        self.owner, self.key, self.fields = owner, key, fields

    def __str__(self) -> str:
        import difflib  # only when the message is shown

        key = self.key if isinstance(self.key, str) else ""
        close = difflib.get_close_matches(key, self.fields, n=1) if key else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        fields = ", ".join(map(repr, self.fields)) or "(none)"
        return f"{self.owner} has no field {shorten(repr(self.key), 60)}{hint}; fields: {fields}"


class SignatureError(SigformError, TypeError):
    """A signature is malformed: bad or reserved names, unknown types, empty outputs, ..."""


class InputError(SigformError, TypeError):
    """A program was called with missing, unknown or invalid inputs (raised before any LM call)."""


class ParameterError(InputError, ValueError):
    """A request setting has an invalid value, or does not apply to the model in strict mode."""


@dataclass(frozen=True)
class FieldError:
    """One field that could not be read: which field, what type, what was seen, and why."""

    field: str
    expected: str
    seen: str
    message: str

    def __str__(self) -> str:
        return f"field `{self.field}` (expected {self.expected}): {self.message}; saw {self.seen}"


class ParseError(SigformError):
    """LM output could not be turned into the declared typed values.

    ``errors`` lists every failing field (not only the first); ``raw`` is the full completion
    text, kept so that nothing is lost; ``adapter`` names the adapter(s) that tried.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        errors: list[FieldError] | None = None,
        raw: str | None = None,
        adapter: str | None = None,
        completions: list[Any] | None = None,
    ) -> None:
        self.errors: list[FieldError] = list(errors or [])
        self.raw = raw
        self.adapter = adapter
        self.completions: list[Any] = list(completions or [])
        self.usage: Any = None
        self.attempts = 0
        self.summary = message or "could not parse the LM output"
        super().__init__(self._compose())

    def _compose(self) -> str:
        lines = [self.summary if not self.adapter else f"[{self.adapter}] {self.summary}"]
        lines += [f"  - {e}" for e in self.errors]
        if self.raw is not None:
            lines.append(f"  raw completion: {shorten(self.raw, 400)}")
        return "\n".join(lines)

    @property
    def fields(self) -> list[str]:
        """Names of the fields that failed, in report order."""
        return [e.field for e in self.errors]

    def with_context(self, *, raw: str | None = None, adapter: str | None = None) -> ParseError:
        """Return a copy of this error of the same class with ``raw`` / ``adapter`` filled in."""
        err = type(self)(
            self.summary,
            errors=self.errors,
            raw=raw if raw is not None else self.raw,
            adapter=adapter if adapter is not None else self.adapter,
            completions=self.completions,
        )
        err.usage, err.attempts = self.usage, self.attempts
        err.__cause__ = self.__cause__
        return err


class JSONTextError(SigformError, ValueError):
    """Text holds no single readable JSON value (cut off, or invalid even after repair); raised by
    :func:`sigform.types.parse_json_text`. The message says why."""


class StructureError(ParseError):
    """The completion did not follow the requested format (markers, JSON object, tags missing)."""


class FieldValueError(ParseError):
    """The structure was found but at least one field's value does not validate."""


class ToolError(SigformError):
    """A tool is defined or used wrongly: an unusable function signature, an unknown command
    placeholder, a duplicate tool name, a call that needs approval but no approver was given."""


class ToolArgumentsError(ToolError):
    """Arguments for a tool call do not match its schema. ``errors`` names every bad argument; the
    agent loop sends this message back to the LM as an error result instead of raising."""

    def __init__(self, message: str, *, tool: str, errors: list[FieldError] | None = None) -> None:
        self.tool = tool
        self.errors: list[FieldError] = list(errors or [])
        lines = [message, *(f"  - {e}" for e in self.errors)]
        super().__init__("\n".join(lines))


class MCPServerError(ToolError):
    """An MCP server could not be started, answered nothing in time, or died: the message names
    the server and, for a server process that exited, its exit code and the end of its stderr.
    A tool call that meets it is an error result the model reads; the agent goes on."""


class BatchError(SigformError):
    """More than ``max_errors`` examples of a batch failed; the batch stopped.

    ``results`` holds the predictions finished so far (``None`` elsewhere), ``failures`` every
    failure recorded (:class:`sigform.predict.Failure`: index, example, error).
    """

    def __init__(self, message: str, *, results: list[Any], failures: list[Failure]) -> None:
        self.results = results
        self.failures = failures
        super().__init__(message)


class ProgramStateError(SigformError, ValueError):
    """Saved program state does not fit the program it is loaded into (or is malformed)."""


class CheckpointError(SigformError, ValueError):
    """A checkpoint file cannot be used: not one, malformed, or written by another program state."""


class MetricValueError(SigformError, TypeError):
    """A metric returned something that is not a bool or a finite number."""


class RequestVetoed(SigformError):
    """A callback's ``on_request`` vetoed an LM request (nothing was sent)."""

    def __init__(self, reason: str, *, callback: str | None = None) -> None:
        self.reason = reason
        self.callback = callback
        where = f" by {callback}" if callback else ""
        super().__init__(f"LM request vetoed{where}: {reason}")


class CacheEntryError(SigformError, ValueError):
    """A stored cache value is not a valid entry of this sigform (a miss, never an answer)."""


class MalformedResponseError(SigformError, ValueError):
    """A successful (HTTP 200) response whose body (or a streamed chunk) is not a chat
    completion; ``raw`` is the text received, where it is known."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class ScriptError(SigformError):
    """The script cannot answer a call: it is exhausted, has no matching entry, or holds an item
    of an unsupported kind. Not an :class:`~sigform.errors.LMError`, so retry logic never hides it."""


class LMError(SigformError):
    """A language-model call failed. ``provider_message`` keeps what the provider said."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        provider_message: str | None = None,
        status_code: int | None = None,
    ) -> None:
        self.model = model
        self.provider_message = provider_message
        self.status_code = status_code
        super().__init__(message)


class AuthenticationError(LMError):
    """The provider rejected the credentials (never retried)."""


class CredentialError(LMError):
    """A credential or connection setting could not be resolved (the value itself is never shown).

    An :class:`~sigform.errors.LMError` (the call could not be made), never retried."""


class RateLimitError(LMError):
    """The provider asked us to slow down (retried with backoff, honouring Retry-After)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


class ContextWindowError(LMError):
    """The request does not fit the model's context window (never retried as is)."""


class BadRequestError(LMError):
    """The provider rejected the request as malformed or unsupported (never retried)."""


class LMTimeoutError(LMError):
    """The call timed out (retried)."""

    retryable = True


class ProviderError(LMError):
    """The provider failed on its side: 5xx, connection errors (retried)."""

    retryable = True


class LocalModelError(LMError):
    """The embedded local model could not be used: the ``local`` extra is missing, the model
    file fails its checksum, or the local server failed to start or died (log tail included)."""
