"""The contract between an LM and what carries its requests to a model.

A :class:`Backend` takes a finished :class:`~sigform.lm.request.Request` and returns the provider's
answer in the OpenAI chat-completions shape: a response body (plus its cost, when known) or, for
streams, chunk dicts. It does nothing else: the LM around it keeps the cache, hooks, retries,
history, usage and parameter checks. sigform ships two (:mod:`sigform.lm.transport` for OpenAI-compatible
endpoints, litellm for the rest); ``LM(model, backend=...)`` puts any other under a real LM --
:class:`sigform.testing.ScriptedBackend` answers from a script, the way a mock transport sits
under a real HTTP client.

A backend may also have ``prepare(req)`` and ``async aprepare(req)``: making what sending ``req``
needs (clients, sessions) ahead of time. A rate-limited LM calls them before the request books
its slot, so that the send follows the slot (see :mod:`sigform.lm.rate_limit`).

A backend raises what its transport raises (mapped to sigform errors by the LM) or a
:class:`~sigform.errors.LMError`, which counts as the provider's failure (retried when retryable).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol, runtime_checkable

from sigform.lm.request import Request

# the response body in the OpenAI chat-completions shape, and its cost in USD when known
Body = tuple[dict[str, Any], "float | None"]


@runtime_checkable
class Backend(Protocol):
    """What sends requests (see the module docstring). ``name`` shows in history entries and hooks."""

    name: str

    def complete(self, req: Request) -> Body: ...

    async def acomplete(self, req: Request) -> Body: ...

    def stream(self, req: Request) -> Iterator[dict[str, Any]]: ...

    def astream(self, req: Request) -> AsyncIterator[dict[str, Any]]: ...
