"""sigform's own settings of an LM, declared once.

:class:`LMOptions` is the one list of what ``LM(...)`` accepts besides the model, the endpoint,
credentials and request defaults: each field's name, type and default live here, and the
constructor, :meth:`LM.copy`, inheriting the configured LM and saving a program
(:mod:`sigform.lm.saved_state`) all read this list instead of keeping their own copy of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from sigform import hooks
from sigform.lm.backend import Backend
from sigform.lm.retry import check_limits

# how a saved program keeps a field: "always", or "when set" (left out while None or empty);
# fields without this mark (callbacks, headers, pruning ...) are code, never saved
_SAVED = "saved"


def _saved(how: str, *types: type) -> dict[str, object]:
    return {_SAVED: (how, types)}


@dataclass(frozen=True)
class LMOptions:
    """How an LM behaves, apart from what it sends: ``LM(model, cache=False, num_retries=1)`` or
    ``LM(model, options=LMOptions(...))``; read back as ``lm.options``.

    ``cache`` turns the response cache on or off (per call: ``lm(..., cache=False)``);
    ``num_retries`` bounds retries of retryable failures, waiting ``retry_delay`` seconds (doubled
    per retry, with jitter) unless the provider says how long; ``timeout`` is seconds per request
    (None: no limit); ``fast_path`` picks sigform's own transport for OpenAI-compatible endpoints
    (None = automatic); ``strict`` turns "setting does not apply" warnings into errors;
    ``callbacks`` are :class:`sigform.hooks.Callback` objects for this LM; ``history_size`` bounds
    ``lm.history``; ``headers`` are sent with every request; ``capabilities`` override
    :meth:`LM.supports`; ``prompt_cache`` and ``prune`` are the defaults of the request options of
    the same names (see :mod:`sigform.conversation`); ``backend`` sends the requests instead of the
    one the model would get (see :mod:`sigform.lm.backend`; a test double:
    :class:`sigform.testing.ScriptedBackend`); ``rpm`` and ``tpm`` limit requests and estimated
    tokens per minute (one bucket per process for each model, endpoint and limits; saved with the
    program), ``rate_limit`` puts any :class:`~sigform.lm.rate_limit.RateLimiter` there instead
    (e.g. one shared by Ray workers; it wins over ``rpm``/``tpm``); see :mod:`sigform.lm.rate_limit`.
    ``model_type`` is ``"chat"`` (requests go to chat completions), ``"text"`` (a base model, no
    chat template: text completions, see :mod:`sigform.lm.text_mode`) or None (detected).
    """

    cache: bool = field(default=True, metadata=_saved("always", bool))
    num_retries: int = field(default=3, metadata=_saved("always", int))
    timeout: float | None = field(default=None, metadata=_saved("always", int, float, type(None)))
    fast_path: bool | None = field(default=None, metadata=_saved("always", bool, type(None)))
    strict: bool = field(default=False, metadata=_saved("always", bool))
    callbacks: Sequence[hooks.Callback] = ()
    history_size: int = 1000
    retry_delay: float = 0.5
    headers: Mapping[str, str] = field(default_factory=dict)
    capabilities: Mapping[str, bool] = field(default_factory=dict, metadata=_saved("when set", Mapping))
    prompt_cache: bool | None = field(default=None, metadata=_saved("when set", bool, type(None)))
    prune: Any = None
    backend: Backend | None = None
    rpm: float | None = field(default=None, metadata=_saved("when set", int, float, type(None)))
    tpm: float | None = field(default=None, metadata=_saved("when set", int, float, type(None)))
    rate_limit: Any = None
    model_type: str | None = field(default=None, metadata=_saved("when set", str, type(None)))

    def __post_init__(self) -> None:
        from sigform.lm.text_mode import check_model_type

        check_model_type(self.model_type)
        check_limits(num_retries=self.num_retries, timeout=self.timeout, retry_delay=self.retry_delay)
        from sigform.lm.rate_limit import check_limiter, check_rate

        object.__setattr__(self, "rpm", check_rate("rpm", self.rpm))
        object.__setattr__(self, "tpm", check_rate("tpm", self.tpm))
        check_limiter(self.rate_limit)
        # private copies: a caller's later edits to its list or dict do not reach this LM
        object.__setattr__(self, "callbacks", tuple(self.callbacks or ()))
        object.__setattr__(self, "headers", dict(self.headers or {}))
        object.__setattr__(self, "capabilities", dict(self.capabilities or {}))

    @classmethod
    def names(cls) -> frozenset[str]:
        """Every option name."""
        return _NAMES

    @classmethod
    def take(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The options among ``kwargs``, removed from it (the rest are request defaults and
        connection settings)."""
        return {name: kwargs.pop(name) for name in _NAMES & kwargs.keys()}

    def updated(self, changes: Mapping[str, Any]) -> LMOptions:
        """These options with ``changes`` applied (unknown names are a TypeError)."""
        return replace(self, **changes) if changes else self

    @classmethod
    def saved_fields(cls) -> dict[str, tuple[str, tuple[type, ...]]]:
        """The options a saved program keeps: name -> (how, the types a saved value may have)."""
        return {f.name: f.metadata[_SAVED] for f in fields(cls) if _SAVED in f.metadata}


_NAMES = frozenset(f.name for f in fields(LMOptions))
