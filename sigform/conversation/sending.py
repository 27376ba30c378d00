"""Sending one request so that it fits and its provider accepts it.

Used by the adapter call loop and the agent loop, which know the request's :class:`Layout`:

1. **prune** -- when the request has prunable turns and would not fit the model's context
   window (minus the output reserve), or ``keep_last`` is set, drop the oldest turns
   (:func:`~sigform.conversation.pruning.prune`); counting is skipped when even an upper bound
   of the request's size fits;
2. **mark** -- with ``prompt_cache``, put the provider's cache marker on the stable prefix;
3. **normalise** -- make the sequence one the provider accepts;
4. **send**, with the prune report visible to the LM's history entry; on a context-window
   error, prune further (half of the kept turns) and retry once, then fail with an error that
   says what was dropped.

Options come from the request keyword arguments (``prune=``, ``prompt_cache=``), then the LM
(``lm.options``), then settings (``sigform.configure(prune=..., prompt_cache=...)``). The
request's :class:`Layout` (which turns may be dropped, which prefix is stable) is ``send``'s own
``layout=`` argument, never a request option.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sigform.conversation.layout import Layout
from sigform.conversation.pruning import Pruned, Pruning, marker_message, prune
from sigform.conversation.report import PruneReport, reporting
from sigform.errors import ContextWindowError
from sigform.message import Message
from sigform.probes import probe
from sigform.provider.normalise import normalise
from sigform.provider.prompt_cache import mark_prefix
from sigform.provider.tokens import model_limits, output_reserve, token_counter, upper_bound
from sigform.settings import get_setting

__all__ = ["CONTROL_KEYS", "Fitted", "RequestFitter", "asend", "send"]

CONTROL_KEYS = ("prune", "prompt_cache")
_MAX_TOKEN_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


# the defaults, built once: Pruning is frozen, and every request needs one
_PRUNING_ON = Pruning()
_PRUNING_OFF = Pruning(enabled=False)


def _pruning(value: object) -> Pruning:
    if value is None or value is True:
        return _PRUNING_ON
    if value is False:
        return _PRUNING_OFF
    if isinstance(value, Pruning):
        return value
    if isinstance(value, Mapping):
        return Pruning(**value)
    raise TypeError(f"prune must be a sigform Pruning, a dict of its settings, True or False; got {value!r}")


def _identify(lm: object) -> tuple[str | None, str | None]:
    """The model string and litellm provider name of ``lm`` (None when unknown)."""
    model = getattr(lm, "model", None)
    model = model if isinstance(model, str) else None
    # a provider that cannot be resolved: unknown; the call will say why
    provider = probe("the LM's provider", lambda: getattr(lm, "provider", None), None)
    if not isinstance(provider, str) and model and "/" in model:
        provider = model.split("/", 1)[0]
    return model, provider if isinstance(provider, str) else None


@dataclass(slots=True)
class Fitted:
    """The request as it will be sent, and what was pruned from it."""

    messages: list[Message]
    kwargs: dict[str, Any]
    report: PruneReport | None


class RequestFitter:
    """Fits one request (see the module docstring); :meth:`first` for the first attempt,
    :meth:`tighter` after a context-window error."""

    def __init__(
        self, lm: object, messages: list[Message], kwargs: Mapping[str, object], layout: Layout | None = None
    ) -> None:
        kwargs = dict(kwargs)
        prune_opt = kwargs.pop("prune", None)
        cache_opt = kwargs.pop("prompt_cache", None)
        self.lm = lm
        self.messages = messages
        self.kwargs = kwargs
        self.layout = layout
        options = getattr(lm, "options", None)  # a sigform LM's; other LMs have none
        if prune_opt is None:
            prune_opt = getattr(options, "prune", None)
        if prune_opt is None:
            prune_opt = get_setting("prune")
        self.pruning = _pruning(prune_opt)
        if cache_opt is None:
            cache_opt = getattr(options, "prompt_cache", None)
        if cache_opt is None:
            cache_opt = get_setting("prompt_cache", False)
        self.prompt_cache = bool(cache_opt)
        self.model, self.provider = _identify(lm)
        self.report: PruneReport | None = None
        self._counts: list[int] | None = None
        self._exact = False

    # -- budget ----------------------------------------------------------------------------
    def _requested_output(self) -> int | None:
        defaults = getattr(self.lm, "kwargs", None)
        for source in (self.kwargs, defaults if isinstance(defaults, Mapping) else {}):
            for key in _MAX_TOKEN_KEYS:
                value = source.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return None

    def budget(self) -> int | None:
        """The prompt's token budget (None when the model's context window is unknown)."""
        p = self.pruning
        if p.max_prompt_tokens is not None:
            return p.max_prompt_tokens
        limits = model_limits(self.model, context_window=p.context_window)
        if limits.context_window is None:
            return None
        requested = p.reserve_output if p.reserve_output is not None else self._requested_output()
        return limits.context_window - output_reserve(limits, requested)

    def _count(self) -> list[int]:
        if self._counts is None:
            counter = token_counter(self.model)
            tools = self.kwargs.get("tools")
            counts = counter.messages(self.messages)
            if tools and counts:  # tool definitions are part of the prompt: charge them to message 0
                counts[0] += counter.total([], tools=tools)
            self._counts, self._exact = counts, counter.exact
            self._marker_tokens = counter.message(marker_message(self.pruning.marker, 999, 9999))
        return self._counts

    def _bound(self) -> int:
        """An upper bound of the request's tokens (tool definitions included), cheap to compute."""
        tools = self.kwargs.get("tools")
        extra = [{"content": json.dumps(tools, default=str, ensure_ascii=False)}] if tools else []
        return upper_bound([*self.messages, *extra])

    # -- attempts --------------------------------------------------------------------------
    def _finish(self, pruned: Pruned) -> Fitted:
        self.report = pruned.report
        messages = pruned.messages
        if self.prompt_cache and self.layout is not None:
            messages = mark_prefix(messages, self.layout.prefix, self.provider, self.model)
        elif self.prompt_cache:  # no layout known: the leading system message is the stable part
            lead = 1 if messages and messages[0].get("role") == "system" else 0
            messages = mark_prefix(messages, lead, self.provider, self.model)
        return Fitted(normalise(messages, self.provider), self.kwargs, pruned.report)

    def first(self) -> Fitted:
        """The request for the first attempt."""
        layout, p = self.layout, self.pruning
        if layout is None or not layout.units or not p.enabled:
            return self._finish(Pruned(self.messages, None, layout.prefix if layout else 0))
        budget = self.budget()
        if p.keep_last is None and (budget is None or self._bound() <= budget):
            return self._finish(Pruned(self.messages, None, layout.prefix))
        counts = self._count()
        pruned = prune(
            self.messages,
            layout,
            counts,
            budget=budget,
            keep_last=p.keep_last,
            marker=p.marker,
            marker_tokens=self._marker_tokens,
            exact=self._exact,
        )
        return self._finish(pruned)

    def tighter(self, error: ContextWindowError) -> Fitted:
        """The request for the one retry after ``error``: half of the kept turns dropped too.
        Raises a :class:`ContextWindowError` saying what was dropped when nothing is left to drop."""
        layout = self.layout
        kept = self.report.kept_units if self.report is not None else len(layout.units) if layout else 0
        if layout is None or not self.pruning.enabled or not self.pruning.retry or kept == 0:
            raise self.failure(error, retried=False)
        counts = self._count()
        pruned = prune(
            self.messages,
            layout,
            counts,
            keep_last=kept // 2,
            marker=self.pruning.marker,
            marker_tokens=self._marker_tokens,
            reason="context window error",
            exact=self._exact,
        )
        return self._finish(pruned)

    def failure(self, error: ContextWindowError, *, retried: bool) -> ContextWindowError:
        """The error to raise: the provider's, with what pruning did (or why it could not)."""
        if self.report is not None:
            what = f"after pruning ({self.report.summary()})"
        elif self.layout is not None and self.layout.units and self.pruning.enabled:
            what = "(no earlier turns left to drop)"
        else:
            what = "(the request has no earlier turns that could be pruned)"
        again = " and one retry with fewer turns" if retried else ""
        err = ContextWindowError(
            f"the request does not fit the context window of {self.model or 'the model'}{again} "
            f"{what}: {error}",
            model=error.model or self.model,
            provider_message=error.provider_message,
            status_code=error.status_code,
        )
        err.prune_report = self.report  # type: ignore[attr-defined]
        return err


def send(
    lm: Any,
    messages: list[Message],
    kwargs: Mapping[str, Any],
    *,
    layout: Layout | None = None,
    call: Callable[..., object] | None = None,
) -> Any:
    """Send one request through ``call`` (default ``lm``) fitted for ``lm`` (sync); ``layout``
    is the structure of ``messages`` (None: nothing is pruned, the leading system message is
    the stable prefix)."""
    fitter = RequestFitter(lm, messages, kwargs, layout)
    call = call or lm
    fitted = fitter.first()
    try:
        with reporting(fitted.report):
            return call(fitted.messages, **fitted.kwargs)
    except ContextWindowError as exc:
        error = exc
    fitted = fitter.tighter(error)
    try:
        with reporting(fitted.report):
            return call(fitted.messages, **fitted.kwargs)
    except ContextWindowError as exc:
        raise fitter.failure(exc, retried=True) from None


async def asend(
    lm: Any,
    messages: list[Message],
    kwargs: Mapping[str, object],
    *,
    layout: Layout | None = None,
    call: Callable[..., Awaitable[object]] | None = None,
) -> Any:
    """Async :func:`send` (default ``lm.acall``)."""
    fitter = RequestFitter(lm, messages, kwargs, layout)
    call = call or lm.acall
    fitted = fitter.first()
    try:
        with reporting(fitted.report):
            return await call(fitted.messages, **fitted.kwargs)
    except ContextWindowError as exc:
        error = exc
    fitted = fitter.tighter(error)
    try:
        with reporting(fitted.report):
            return await call(fitted.messages, **fitted.kwargs)
    except ContextWindowError as exc:
        raise fitter.failure(exc, retried=True) from None
