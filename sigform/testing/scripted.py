"""A language model that answers from a script, for tests (yours and ours).

:class:`ScriptedLM` implements :class:`sigform.lm.interface.LMProtocol` without any network: each
call consumes the next scripted response(s) and records what it was sent, so a test can check both
what a program did with the answer and which prompt it built::

    lm = ScriptedLM(["[[ ## answer ## ]]\\nParis\\n\\n[[ ## completed ## ]]"])
    with sf.context(lm=lm):
        assert qa(question="Capital of France?").answer == "Paris"
    assert "Capital of France?" in lm.last_messages[-1]["content"]

Script items (in order, one per completion; a call with ``n=3`` consumes three):

* ``str`` -- the completion text (``finish_reason="stop"``);
* :class:`~sigform.lm.interface.Completion` -- returned as is (reasoning, tool calls, usage, ...);
* ``dict`` -- keyword arguments of ``Completion`` (``text``, ``reasoning``, ``tool_calls`` as
  :class:`ToolCall` or ``{"name", "arguments", "id"}`` dicts, ``usage`` as :class:`Usage` or dict,
  ``finish_reason``, ...);
* an exception instance or class -- raised when reached (e.g. ``RateLimitError("slow down")``);
* a callable ``(messages, kwargs) -> item | list[item]`` -- called at that point; a list answers
  all ``n`` completions of the call at once. In :meth:`ScriptedLM.acall` it may be ``async``.

``responses`` may also be one callable (used for every call) or any iterator (e.g.
``itertools.repeat("ok")``). :meth:`ScriptedLM.by_input` answers by the last user message instead
of by order, for batch tests where call order is not deterministic.

Like a real provider, the scripted model refuses requests that use features it was not declared
to support (``strict=True``): native ``tools``, ``response_format`` JSON modes, ``stop`` and
multimodal content parts. That catches adapters that forget to ask ``supports()`` first.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from sigform.errors import BadRequestError, ScriptError
from sigform.excerpt import shorten
from sigform.lm.interface import Completion, ToolCall, Usage
from sigform.message import Message
from sigform.probes import probe

__all__ = ["DEFAULT_FEATURES", "ScriptError", "ScriptedCall", "ScriptedLM", "last_user_text"]

DEFAULT_FEATURES: frozenset[str] = frozenset({"stop", "json_object"})

_COMPLETION_FIELDS = frozenset(f.name for f in dataclasses.fields(Completion))
_TEXT_PART_TYPES = frozenset({"text", "input_text"})


class ScriptedCall(NamedTuple):
    """One recorded call: deep copies of the ``messages`` and request ``kwargs`` it was sent."""

    messages: list[Message]
    kwargs: dict[str, Any]


def _is_exception(item: object) -> bool:
    return isinstance(item, BaseException) or (isinstance(item, type) and issubclass(item, BaseException))


def _check_item(item: object, where: str) -> None:
    if isinstance(item, (str, Completion, Mapping)) or _is_exception(item) or callable(item):
        return
    raise ScriptError(
        f"{where} is a {type(item).__name__} ({shorten(item, 60)}); expected a str, Completion, dict of "
        "Completion fields, exception, or callable (messages, kwargs) -> response"
    )


def _snapshot(value: object) -> Any:
    """Deep copy so later mutation by the caller cannot rewrite history; shallow if uncopyable."""
    deep = probe("a deep copy", lambda: (copy.deepcopy(value),), None)
    return copy.copy(value) if deep is None else deep[0]


def _tool_call(value: object) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    if isinstance(value, Mapping) and "name" in value:
        args = value.get("arguments", value.get("args", {}))
        return ToolCall(name=str(value["name"]), arguments=args, id=value.get("id"))
    raise ScriptError(
        f"scripted tool call must be a ToolCall or a dict with 'name'; got {shorten(value, 80)}"
    )


def _text_of(content: object) -> str:
    """The text of a message's content: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") in _TEXT_PART_TYPES
        )
    return "" if content is None else str(content)


def last_user_text(messages: list[Message]) -> str:
    """The text of the last ``role == "user"`` message (empty string when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _brief(messages: list[Message], keep: int = 3) -> str:
    if not messages:
        return "    (no messages)"
    shown = messages[-keep:]
    lines = [f"    ... {len(messages) - keep} earlier message(s)"] if len(messages) > keep else []
    lines += [f"    {m.get('role', '?')}: {shorten(_text_of(m.get('content')), 200)}" for m in shown]
    return "\n".join(lines)


class _ByInput:
    """Callable script entry that picks the answer by the last user message's text."""

    def __init__(self, table: Mapping[str, object] | Callable[[str], object], default: object) -> None:
        if isinstance(table, Mapping):
            for key, value in table.items():
                if not isinstance(key, str) or not key:
                    raise ScriptError(f"by_input keys must be non-empty strings; got {key!r}")
                _check_item(value, f"by_input[{key!r}]")
        elif not callable(table):
            raise ScriptError(f"by_input takes a mapping or a function (text) -> response; got {type(table)}")
        self.table = table
        self.default = default

    def __call__(self, messages: list[Message], kwargs: Mapping[str, object]) -> object:
        text = last_user_text(messages)
        if not isinstance(self.table, Mapping):
            return self.table(text)
        if text in self.table:
            return self.table[text]
        hits = [key for key in self.table if key in text]
        # Overlapping keys ("2" inside "12"): the one that contains every other hit is the
        # intended, most specific match; anything else is ambiguous and reported, not guessed.
        best = [key for key in hits if all(other in key for other in hits)]
        if len(best) == 1:
            return self.table[best[0]]
        if hits:
            raise ScriptError(
                f"ScriptedLM.by_input: keys {hits!r} all match the last user message; make them "
                f"more specific. Message: {shorten(text, 300)}"
            )
        if self.default is not None:
            return self.default
        raise ScriptError(
            f"ScriptedLM.by_input: no key matches the last user message and no default was given.\n"
            f"  keys: {shorten(list(self.table), 300)}\n  message: {shorten(text, 300)}"
        )


class ScriptedLM:
    """A scripted :class:`~sigform.lm.interface.LMProtocol` implementation (see module docs).

    Args:
        responses: the script -- a list/iterator of items, or one callable used for every call.
        model: the ``model`` name reported (and stamped on string/dict completions).
        features: what :meth:`supports` answers True for (default ``{"stop", "json_object"}``);
            e.g. ``{"json_schema", "json_object", "tools", "stop", "reasoning", "multimodal"}``.
        usage: usage attached to string responses (default: zero usage).
        strict: refuse requests that use undeclared features, as a real provider would.
        model_type: ``"chat"``, or ``"text"`` to stand for a base model (adapters then send one
            plain-text document: see :mod:`sigform.adapters.document`).

    Thread- and asyncio-safe: responses are taken under a lock, so concurrent calls never share or
    skip an item; callables run outside the lock.
    """

    def __init__(
        self,
        responses: Iterable[object] | Callable[..., object],
        *,
        model: str = "scripted",
        features: Iterable[str] = DEFAULT_FEATURES,
        usage: Usage | None = None,
        strict: bool = True,
        model_type: str = "chat",
    ) -> None:
        from sigform.lm.text_mode import check_model_type

        self.model_type = check_model_type(model_type) or "chat"
        if isinstance(responses, (str, bytes, Completion, Mapping)) or _is_exception(responses):
            raise ScriptError(
                "ScriptedLM takes a list of responses (or one callable for every call); wrap a single "
                f"response in a list: ScriptedLM([{shorten(responses, 40)}])"
            )
        self._total: int | None
        self._items: Iterator[object]
        if callable(responses) and not isinstance(responses, Iterable):
            self._every: Callable[..., object] | None = responses
            self._items, self._total = iter(()), None
        elif isinstance(responses, Iterable):
            self._every = None
            if isinstance(responses, (list, tuple)):
                for i, item in enumerate(responses):
                    _check_item(item, f"responses[{i}]")
                self._total = len(responses)
            else:
                self._total = None
            self._items = iter(responses)
        else:
            raise ScriptError(
                f"ScriptedLM responses must be a list or a callable; got {type(responses).__name__}"
            )
        if isinstance(features, str):
            features = {features}
        self.features: frozenset[str] = frozenset(features)
        self.model = model
        self.usage = usage if usage is not None else Usage()
        self.strict = strict
        self.calls: list[ScriptedCall] = []
        self._consumed = 0
        self._lock = threading.Lock()

    @classmethod
    def by_input(
        cls,
        table: Mapping[str, object] | Callable[[str], object],
        *,
        default: object = None,
        **options: Any,
    ) -> ScriptedLM:
        """A scripted LM that answers by the text of the last user message, not by call order.

        ``table`` maps a key to a script item; the entry whose key equals the message text, or
        else the one key found inside it, answers (overlapping keys resolve to the most specific
        one, otherwise the call fails as ambiguous). Or pass a function ``(text) -> item``.
        ``default`` answers when nothing matches; without it an unmatched call raises
        :class:`ScriptError`. Other keyword arguments go to :class:`ScriptedLM`.
        """
        if default is not None:
            _check_item(default, "by_input default")
        return cls(_ByInput(table, default), **options)

    # -- LMProtocol ---------------------------------------------------------------------------

    def supports(self, feature: str) -> bool:
        """True when ``feature`` was declared in ``features``."""
        return feature in self.features

    def __call__(self, messages: list[Message], **kwargs: object) -> list[Completion]:
        """Answer one request with the next scripted response(s)."""
        n = self._begin(messages, kwargs)
        out: list[Completion] = []
        first = True
        while len(out) < n:
            for i, item in enumerate(self._take(n - len(out), n, messages, kwargs, first)):
                result = self._resolve_sync(item, messages, kwargs)
                self._collect(out, result, n, first and i == 0)
            first = False
        return out

    async def acall(self, messages: list[Message], **kwargs: object) -> list[Completion]:
        """Async twin of :meth:`__call__`; scripted callables may be ``async`` here."""
        n = self._begin(messages, kwargs)
        out: list[Completion] = []
        first = True
        while len(out) < n:
            for i, item in enumerate(self._take(n - len(out), n, messages, kwargs, first)):
                result = item
                if callable(item) and not _is_exception(item):
                    result = item(_snapshot(messages), _snapshot(kwargs))
                    if inspect.isawaitable(result):
                        result = await result
                self._collect(out, result, n, first and i == 0)
            first = False
        return out

    # -- streaming (like sigform.LM.stream: deltas, then the completions) -----------------------

    stream_chunk_chars: int = 8  # characters per streamed text delta

    def stream(self, messages: list[Message], **kwargs: object) -> Iterator[Any]:
        """Answer like :meth:`__call__`, but yield each completion's reasoning and text as
        ``StreamDelta`` pieces of ``stream_chunk_chars`` characters, then the ``list[Completion]``."""
        completions = self(messages, **kwargs)
        yield from _deltas(completions, self.stream_chunk_chars)
        yield completions

    async def astream(self, messages: list[Message], **kwargs: object) -> Any:
        """Async twin of :meth:`stream`."""
        completions = await self.acall(messages, **kwargs)
        for delta in _deltas(completions, self.stream_chunk_chars):
            yield delta
        yield completions

    # -- inspection ---------------------------------------------------------------------------

    @property
    def last_call(self) -> ScriptedCall:
        """The most recent recorded call (raises :class:`ScriptError` before any call)."""
        with self._lock:
            if not self.calls:
                raise ScriptError("ScriptedLM has not been called yet")
            return self.calls[-1]

    @property
    def last_messages(self) -> list[Message]:
        """Messages of the most recent call."""
        return self.last_call.messages

    @property
    def last_kwargs(self) -> dict[str, Any]:
        """Request keyword arguments of the most recent call."""
        return self.last_call.kwargs

    @property
    def remaining(self) -> int | None:
        """Scripted responses not yet used (``None`` for callables and open-ended iterators)."""
        if self._total is None:
            return None
        with self._lock:
            return self._total - self._consumed

    def __repr__(self) -> str:
        left = "" if self.remaining is None else f", remaining={self.remaining}"
        return f"ScriptedLM(model={self.model!r}, calls={len(self.calls)}{left})"

    # -- internals ----------------------------------------------------------------------------

    def _begin(self, messages: list[Message], kwargs: Mapping[str, object]) -> int:
        n = kwargs.get("n")
        n = 1 if n is None else n
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise BadRequestError(f"n must be a positive integer; got {n!r}", model=self.model)
        with self._lock:
            self.calls.append(ScriptedCall(_snapshot(messages), _snapshot(kwargs)))
        if self.strict:
            self._check_features(messages, kwargs)
        return n

    def _check_features(self, messages: list[Message], kwargs: Mapping[str, object]) -> None:
        wanted: list[str] = []
        if kwargs.get("tools"):
            wanted.append("tools")
        if kwargs.get("stop"):
            wanted.append("stop")
        fmt = kwargs.get("response_format")
        if fmt is not None:
            kind = fmt.get("type") if isinstance(fmt, Mapping) else "json_schema"  # a model class
            if kind in ("json_schema", "json_object"):
                wanted.append(kind)
        for message in messages:
            content = message.get("content")
            if isinstance(content, list) and any(
                isinstance(p, Mapping) and p.get("type") not in _TEXT_PART_TYPES for p in content
            ):
                wanted.append("multimodal")
                break
        missing = [f for f in wanted if f not in self.features]
        if missing:
            raise BadRequestError(
                f"ScriptedLM({self.model!r}) was not declared to support {missing}; the request used "
                f"them anyway (declared features: {sorted(self.features)}). Ask lm.supports() first, "
                "or pass features=... / strict=False to ScriptedLM.",
                model=self.model,
            )

    def _take(
        self, count: int, n: int, messages: list[Message], kwargs: Mapping[str, object], first: bool = False
    ) -> list[object]:
        """Pop ``count`` items atomically (the standing callable repeats forever). A call's first
        take stops after a leading callable (its list may answer the whole call); otherwise all the
        call's items are taken at once, so concurrent calls never interleave their items."""
        if self._every is not None:
            return [self._every] * (1 if first else count)
        with self._lock:
            taken: list[object] = []
            for _ in range(count):
                try:
                    item = next(self._items)
                except StopIteration:
                    break
                _check_item(item, f"response #{self._consumed + 1}")
                taken.append(item)
                self._consumed += 1
                if first and len(taken) == 1 and callable(item) and not _is_exception(item):
                    return taken
            if len(taken) == count:
                return taken
            calls = len(self.calls)
        scripted = f"all {self._total} scripted responses" if self._total is not None else "the script"
        raise ScriptError(
            f"ScriptedLM script exhausted: call #{calls} (n={n}) needed another response, but {scripted} "
            f"were already used.\n  last messages:\n{_brief(messages)}"
        )

    def _resolve_sync(self, item: object, messages: list[Message], kwargs: Mapping[str, object]) -> object:
        if callable(item) and not _is_exception(item):
            result = item(_snapshot(messages), _snapshot(kwargs))
            if inspect.isawaitable(result):
                if hasattr(result, "close"):
                    result.close()  # avoid "coroutine was never awaited" noise
                raise ScriptError("a scripted callable returned an awaitable; call lm.acall(...) instead")
            return result
        return item

    def _collect(self, out: list[Completion], result: object, n: int, first: bool) -> None:
        """Append the completion(s) ``result`` stands for; a list must answer the whole call."""
        if isinstance(result, list):
            if not first or len(result) != n:
                raise ScriptError(
                    f"a scripted callable returned {len(result)} responses for a call with n={n}; a list "
                    "must answer all n completions of the call"
                )
            for element in result:
                out.append(self._completion(element))
            return
        out.append(self._completion(result))

    def _completion(self, item: Any) -> Completion:
        if _is_exception(item):
            raise item
        if isinstance(item, Completion):
            return item
        if isinstance(item, str):
            return Completion(
                text=item, finish_reason="stop", usage=self.usage, model=self.model, provider="scripted"
            )
        if isinstance(item, Mapping):
            unknown = set(item) - _COMPLETION_FIELDS
            if unknown or "text" not in item:
                raise ScriptError(
                    f"a scripted dict needs 'text' and only Completion fields {sorted(_COMPLETION_FIELDS)}; "
                    f"got keys {sorted(item)}"
                )
            fields: dict[str, Any] = {
                "finish_reason": "stop",
                "usage": self.usage,
                "model": self.model,
                "provider": "scripted",
                **item,
            }
            fields["tool_calls"] = tuple(_tool_call(c) for c in fields.get("tool_calls") or ())
            if isinstance(fields["usage"], Mapping):
                fields["usage"] = Usage(**fields["usage"])
            return Completion(**fields)
        raise ScriptError(f"a scripted callable returned {type(item).__name__}: {shorten(item, 80)}")


def _deltas(completions: list[Completion], size: int) -> Iterator[object]:
    from sigform.lm.streaming import StreamDelta

    for index, completion in enumerate(completions):
        for kind, text in (("reasoning", completion.reasoning or ""), ("text", completion.text)):
            for start in range(0, len(text), size):
                yield StreamDelta(kind, text[start : start + size], index=index)  # type: ignore[arg-type]
