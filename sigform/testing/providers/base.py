"""What every fake provider shares: the script queue, latency, errors, routing and SSE framing.

A provider module subclasses :class:`FakeProvider` and says where its endpoint lives, whether
a request asks for a stream, and how a list of :class:`Reply` (one per candidate) looks as a
JSON body and as server-sent events. Everything else -- taking the next scripted reply,
sleeping for the configured latency, answering scripted errors in the provider's error shape,
recording requests -- happens here.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import random
import string
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Union

from sigform.testing.providers.replies import ErrorReply, Reply
from sigform.testing.providers.server import LoopbackServer, RecordedRequest, Response

__all__ = ["FakeProvider", "Script", "pieces", "sse"]

# One scripted answer: a reply, several candidates, or a failure.
Script = Union[Reply, Sequence[Reply], ErrorReply]
Responder = Callable[[RecordedRequest], Union[Script, Awaitable[Script]]]

SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]


def sse(data: object, event: str | None = None) -> bytes:
    """One server-sent event: optional ``event:`` line, a ``data:`` line, a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def pieces(text: str, size: int) -> Iterator[str]:
    """``text`` cut into deltas of ``size`` characters (nothing for an empty text)."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


class FakeProvider(LoopbackServer):
    """A loopback server that answers like one provider, following a script.

    Script it with replies given to the constructor or :meth:`push` (answered in order), a
    ``default`` reply used whenever the queue is empty, or a ``responder(request)`` callable
    (sync or async) that returns the answer for each request. A reply given as a sequence is
    several candidates (``n``). ``latency`` seconds are slept (without blocking other requests)
    before each answer; ``stream_interval`` seconds between streamed events. When nothing is
    scripted the fake answers 500 and records an ``AssertionError`` in :attr:`failures`.

    ``litellm_prefix`` and :attr:`api_base` say how to point litellm at the fake::

        with OpenAIChatFake(Reply("hi")) as fake:
            litellm.completion(fake.model("gpt-4o"), messages, api_base=fake.api_base, api_key="k")
    """

    provider: ClassVar[str] = "fake"
    litellm_prefix: ClassVar[str] = ""
    api_path: ClassVar[str] = ""
    supports_candidates: ClassVar[bool] = False

    def __init__(
        self,
        *replies: Script,
        default: Script | None = None,
        responder: Responder | None = None,
        latency: float = 0.0,
        stream_interval: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self._queue: deque[Script] = deque(replies)
        self._queue_lock = threading.Lock()
        self.default = default
        self.responder = responder
        self.latency = latency
        self.stream_interval = stream_interval
        self._rng = random.Random(seed)
        self._counter = itertools.count(1)

    # -- how to reach it -------------------------------------------------------------------
    @property
    def api_base(self) -> str:
        """The ``api_base`` to give litellm (or an SDK) for this provider."""
        return self.base_url + self.api_path

    def model(self, name: str) -> str:
        """The litellm model string that routes ``name`` to this provider's format."""
        return f"{self.litellm_prefix}/{name}"

    def litellm_kwargs(self, name: str, api_key: str = "test-key") -> dict[str, object]:
        """``model``, ``api_base`` and ``api_key`` for ``litellm.completion(**kwargs, messages=...)``."""
        return {"model": self.model(name), "api_base": self.api_base, "api_key": api_key}

    # -- scripting -------------------------------------------------------------------------
    def push(self, *replies: Script) -> None:
        """Queue replies, answered in order before the ``default``."""
        with self._queue_lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        return len(self._queue)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (raises if none came)."""
        if not self.requests:
            raise AssertionError(f"{type(self).__name__} received no request")
        return self.requests[-1]

    def check(self) -> None:
        """Raise the first failure the fake recorded (unscripted request, rendering error)."""
        if self.failures:
            raise AssertionError(f"{type(self).__name__} failed: {self.failures[0]}") from self.failures[0]

    async def _next_script(self, request: RecordedRequest) -> Script:
        if self.responder is not None:
            answer = self.responder(request)
            return await answer if inspect.isawaitable(answer) else answer
        with self._queue_lock:
            if self._queue:
                return self._queue.popleft()
        if self.default is not None:
            return self.default
        raise AssertionError(
            f"{type(self).__name__}: no scripted reply left for {request.method} {request.path}"
        )

    # -- answering -------------------------------------------------------------------------
    async def handle(self, request: RecordedRequest) -> Response:
        if not self.matches(request):
            return self.error_response(ErrorReply(404, f"no such endpoint: {request.method} {request.path}"))
        problem = self.validate(request)
        if problem is not None:
            return self.error_response(ErrorReply(400, problem))
        script = await self._next_script(request)
        delay = script.delay if isinstance(script, (Reply, ErrorReply)) else None
        delay = self.latency if delay is None else delay
        if delay > 0:
            await asyncio.sleep(delay)
        if isinstance(script, ErrorReply):
            return self.error_response(script)
        replies = [script] if isinstance(script, Reply) else list(script)
        if not replies or not all(isinstance(r, Reply) for r in replies):
            raise TypeError(f"a script must be a Reply, a sequence of Reply or an ErrorReply, got {script!r}")
        if len(replies) > 1 and not self.supports_candidates:
            raise ValueError(f"{self.provider} returns one candidate per request; got {len(replies)} replies")
        model = replies[0].model or self.requested_model(request)
        if self.wants_stream(request):
            events = list(self.stream_events(replies, request, model))
            return Response(200, self.stream_headers(request), stream=self._paced(events))
        return Response.json(self.render(replies, request, model), headers=self.response_headers())

    def error_response(self, error: ErrorReply) -> Response:
        """The provider-shaped error response for ``error``."""
        headers = [*self.response_headers(), *error.headers.items()]
        if error.retry_after is not None:
            seconds = error.retry_after
            headers.append(
                ("retry-after", str(int(seconds)) if float(seconds).is_integer() else str(seconds))
            )
        body = error.body if error.body is not None else self.error_payload(error)
        if isinstance(body, (bytes, str)):
            raw = body.encode() if isinstance(body, str) else body
            return Response(error.status, [("content-type", "text/plain"), *headers], raw)
        return Response.json(body, status=error.status, headers=headers)

    async def _paced(self, events: Iterable[bytes]) -> AsyncIterator[bytes]:
        for i, event in enumerate(events):
            if i and self.stream_interval > 0:
                await asyncio.sleep(self.stream_interval)
            yield event

    # -- ids -------------------------------------------------------------------------------
    def make_id(self, prefix: str, length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        """A provider-style id: ``prefix`` + ``length`` random characters (seeded)."""
        return prefix + "".join(self._rng.choices(alphabet, k=length))

    @staticmethod
    def now() -> int:
        return int(time.time())

    # -- what each provider defines --------------------------------------------------------
    def matches(self, request: RecordedRequest) -> bool:
        """Whether the request targets this provider's generation endpoint."""
        raise NotImplementedError

    def validate(self, request: RecordedRequest) -> str | None:
        """What the real API would reject in this request, as its error message (None: valid)."""
        try:
            body = request.json
        except ValueError:
            return "request body is not valid JSON"
        return None if isinstance(body, dict) else "request body must be a JSON object"

    def wants_stream(self, request: RecordedRequest) -> bool:
        """Whether the request asks for a streamed answer (``"stream": true`` by default)."""
        body = request.json
        return isinstance(body, dict) and body.get("stream") is True

    def requested_model(self, request: RecordedRequest) -> str:
        body = request.json
        return str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"

    def render(self, replies: list[Reply], request: RecordedRequest, model: str) -> Any:
        """The non-streamed JSON body."""
        raise NotImplementedError

    def stream_events(self, replies: list[Reply], request: RecordedRequest, model: str) -> Iterable[bytes]:
        """The streamed body, already framed (SSE events)."""
        raise NotImplementedError

    def error_payload(self, error: ErrorReply) -> object:
        """The provider's JSON error body."""
        raise NotImplementedError

    def response_headers(self) -> list[tuple[str, str]]:
        """Extra headers on every response (request ids and the like)."""
        return []

    def stream_headers(self, request: RecordedRequest) -> list[tuple[str, str]]:
        return [*SSE_HEADERS, *self.response_headers()]
