"""``sigform.LM``: how every program talks to a model.

``LM("provider/model", **defaults)`` sends chat-completions requests through litellm, or through
its own HTTP transport for OpenAI-compatible endpoints (the fast path), with a response cache, retries,
credential resolution, a parameter schema, lifecycle hooks, history and usage totals.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sigform.lm import capabilities
from sigform.lm.credentials import CONNECTION_SETTINGS, Credential, is_secret_name
from sigform.lm.default_notice import default_model_notice
from sigform.lm.history import HistoryEntry, inspect_history
from sigform.lm.interface import Completion, Usage
from sigform.lm.lifecycle import Call, Ledger
from sigform.lm.model_names import check_model_name
from sigform.lm.options import LMOptions
from sigform.lm.params import BASE_SPECS, CONTROL, ParamSpec, applicable, check_spelling, nest_dotted
from sigform.lm.rate_limit import limited_route, limiter_of
from sigform.lm.request import Request, cache_key, response_format_dict
from sigform.lm.retry import RetryPolicy, check_limits
from sigform.lm.routing import Route, current, fast_path_eligible, resolve_route
from sigform.lm.streaming import StreamDelta
from sigform.lm.text_mode import completion_params, prompt_of
from sigform.message import Message
from sigform.provider.prompt_cache import mark_prefix
from sigform.settings import get_setting

# features of unknown OpenAI-compatible endpoints that are discovered by trying, and the weakest
# JSON-adapter mode that still counts as having them
_DISCOVERED = {"json_schema": "json_schema", "json_object": "json_object"}
_OPTION_NAMES = LMOptions.names()


class LM:
    """A language model: ``lm(messages, **kw) -> list[Completion]``, ``await lm.acall(...)``.

    ``model`` is a litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``),
    ``"local"`` for the embedded local model, or None: then the LM is a copy of the configured
    ``lm`` (``configured.copy(...)``: model, endpoint, credentials, connection settings, request
    defaults, headers and every option), with the arguments given here over it; with no LM
    configured, the local model.
    ``api_key``, ``api_base`` and connection settings (``api_version``, ``organization``, ...) may be
    literals, ``"env:NAME"``, ``"cmd:<command>"`` or callables (see
    :mod:`sigform.lm.credentials`). Other keyword arguments are request defaults (``temperature``,
    ``max_tokens``, ...), validated against :attr:`param_schema`.

    sigform's own settings (``cache``, ``num_retries``, ``timeout`` ...) are the fields of
    :class:`~sigform.lm.options.LMOptions`, given as keyword arguments or as ``options=``;
    ``lm.options`` holds them.

    With no ``max_tokens`` set on the LM, the program or the call, adapters send one derived from
    the signature (see :mod:`sigform.adapters.output_limit`); ``max_tokens=None`` sends none.
    """

    # read by adapters: requests without a limit get one derived from the signature
    default_output_limit = True
    _api_base: Credential | None
    _api_key: Credential | None

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: Any = None,
        api_key: Any = None,
        options: LMOptions | None = None,
        **kwargs: Any,
    ) -> None:
        given = LMOptions.take(kwargs)  # the rest are request defaults and connection settings
        if kwargs:
            check_spelling(kwargs, f"LM({model!r})", _OPTION_NAMES)
        if model is None:
            configured = get_setting("lm")
            if isinstance(configured, LM) and configured is not self:
                # a copy of the configured LM, whole, with the arguments given here over it
                model = configured.model
                api_base = api_base if api_base is not None else configured._api_base
                api_key = api_key if api_key is not None else configured._api_key
                kwargs = {**configured._connection, **configured.kwargs, **kwargs}
                options = options or configured.options
            else:
                model = "local"
                default_model_notice()
        options = (options or LMOptions()).updated(given)
        if not isinstance(model, str) or not model:
            raise TypeError(f"LM model must be a non-empty string like 'openai/gpt-4o-mini', got {model!r}")
        check_model_name(model, api_base_given=api_base is not None)  # offline: typos fail here
        self.model: str = model
        self._api_base = Credential("api_base", api_base, secret=False) if api_base is not None else None
        self._api_key = Credential("api_key", api_key, secret=True) if api_key is not None else None
        self._connection: dict[str, Credential] = {}
        defaults: dict[str, Any] = {}
        if "extra_headers" in kwargs:  # litellm's name for headers: they may carry credentials
            headers = {**_header_dict(kwargs.pop("extra_headers")), **options.headers}
            options = replace(options, headers=headers)
        for name, value in kwargs.items():
            if name in CONNECTION_SETTINGS or is_secret_name(name):
                self._connection[name] = Credential(name, value)
            else:
                defaults[name] = value
        for name, value in defaults.items():
            spec = BASE_SPECS.get(name)
            if spec is not None:
                spec.validate(value, model)
        self.options: LMOptions = options
        self.kwargs: dict[str, Any] = defaults
        self._ledger = Ledger(options.history_size)
        self._route: Route | None = None
        self._warned: set[str] = set()

    # -- description -----------------------------------------------------------------------

    def __repr__(self) -> str:
        parts = [repr(self.model)]
        if self._api_base is not None:
            parts.append(f"api_base={self._api_base.describe()}")
        if self._api_key is not None:
            parts.append(f"api_key={self._api_key.describe()}")
        parts += [f"{k}={c.describe()}" for k, c in self._connection.items()]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"LM({', '.join(parts)})"

    @property
    def usage(self) -> Usage:
        """Tokens and cost of every provider call this LM made (cache hits excluded)."""
        return self._ledger.usage

    @property
    def stats(self) -> dict[str, int]:
        """How many calls this LM finished, answered from the cache, and saw fail."""
        return self._ledger.stats

    @property
    def history(self) -> deque[HistoryEntry]:
        """This LM's last ``history_size`` calls."""
        return self._ledger.history

    @property
    def api_base(self) -> str | None:
        """The configured endpoint; None for the provider's default (and for ``"local"``, whose
        server address may change while the model stays the same)."""
        return self._api_base.get() if self._api_base is not None else None

    @property
    def model_type(self) -> str:
        """``"text"`` when requests go to text completions (a base model without a chat template,
        see :mod:`sigform.lm.text_mode`), else ``"chat"``: ``model_type=`` as given, or detected
        (the embedded model's GGUF has no chat template). Adapters write a plain-text document for
        a text model."""
        given = self.options.model_type
        if given is not None:
            return given
        return self._resolve().model_type or "chat"

    @property
    def provider(self) -> str:
        """The provider name (resolving the route; may import litellm)."""
        return self._resolve().provider

    @property
    def param_schema(self) -> dict[str, ParamSpec]:
        """Every known setting with its type, default, choices, rule and whether it applies here."""
        return dict(self._resolve().schema)

    def dump_state(self) -> dict[str, Any]:
        """A JSON-ready description for saving programs: model, endpoint (without credentials),
        request defaults and options -- never a credential or an ``env:``/``cmd:`` reference
        (see :mod:`sigform.lm.saved_state`)."""
        from sigform.lm.saved_state import lm_state

        return lm_state(self)

    @classmethod
    def load_state(cls, state: Mapping[str, Any], *, api_key: Any = None, **overrides: Any) -> LM:
        """Rebuild an LM from :meth:`dump_state` output, taking every saved value as untrusted data
        (no command run, no environment variable read); the credential is ``api_key`` (see
        :func:`sigform.lm.saved_state.lm_from_state`). ``overrides`` are applied over it."""
        from sigform.lm.saved_state import lm_from_state

        lm = lm_from_state(state, api_key=api_key)
        return lm.copy(**overrides) if overrides else lm

    def copy(self, **overrides: Any) -> LM:
        """A new LM with the same settings (credentials included) and ``overrides`` applied
        (a fresh history and usage)."""
        args: dict[str, Any] = {
            "model": self.model,
            "api_base": self._api_base,
            "api_key": self._api_key,
            "options": self.options,
            **self._connection,
            **self.kwargs,
        }
        args.update(overrides)
        return type(self)(**args)

    if not TYPE_CHECKING:  # typed access is ``lm.options.<name>``; this keeps ``lm.<name>`` working

        def __getattr__(self, name: str) -> Any:
            options = self.__dict__.get("options")
            if options is not None and name in _OPTION_NAMES:
                return getattr(options, name)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

        def __setattr__(self, name: str, value: Any) -> None:
            if name in _OPTION_NAMES:  # ``lm.cache = False`` sets the option
                value, name = self.options.updated({name: value}), "options"
            object.__setattr__(self, name, value)

    def inspect_history(self, n: int = 1) -> None:
        """Print this LM's last ``n`` calls."""
        inspect_history(n, entries=list(self.history))

    # -- capabilities ----------------------------------------------------------------------

    def supports(self, feature: str) -> bool:
        """Whether the model supports ``feature`` natively (``json_schema``, ``json_object``,
        ``tools``, ``reasoning``, ``stop``, ``multimodal``). ``capabilities={...}`` overrides.

        An OpenAI-compatible server no model map knows is asked for structured outputs until it
        rejects them (``json_schema`` and ``json_object`` answer True unless this endpoint turned
        that mode down before, in this process or, on record, in another: see
        :mod:`sigform.lm.capabilities`); its other features answer conservatively."""
        if feature in self.options.capabilities:
            return bool(self.options.capabilities[feature])
        backend = self.options.backend
        if backend is not None:  # a given backend says what it supports (nothing, by default)
            supports = getattr(backend, "supports", None)
            return bool(supports(feature)) if callable(supports) else False
        api_base = self._api_base.get() if self._api_base is not None else None
        if self.model == "local":
            return feature in ("json_schema", "json_object", "stop")
        fast_path = self.options.fast_path
        if fast_path or (fast_path is None and fast_path_eligible(self.model, api_base)):
            if feature in _DISCOVERED:
                floor = capabilities.best_mode(capabilities.endpoint_key(self.model, api_base))
                return floor <= capabilities.MODES.index(_DISCOVERED[feature])
            return feature == "stop"
        from sigform.lm import litellm_backend as lb

        route = self._resolve()
        return lb.capability(feature, route.model, route.provider)

    # -- request building ------------------------------------------------------------------

    def _resolve(self) -> Route:
        route = self._route
        if route is None:
            api_base = self._api_base.get() if self._api_base is not None else None
            options = self.options
            route = self._route = resolve_route(
                self.model, api_base, options.fast_path, options.backend, options.model_type
            )
        return route

    def _current_route(self) -> Route:
        """The route for the next request: a moving endpoint (the local server) is re-checked."""
        fresh = self._route is None
        route = self._resolve()
        if route.refresh is not None and not fresh:  # a fresh route was just checked
            moved = current(route)
            if moved is not route:
                route = self._route = moved
        return route

    def _call_credentials(self, kwargs: dict[str, Any]) -> tuple[Credential | None, dict[str, Credential]]:
        """The request's credentials: the LM's, with per-call ``api_key=`` and connection settings
        (popped from ``kwargs``) resolved the same way -- never request parameters, so they reach
        neither the body, the history, the hooks nor the cache key."""
        if "api_base" in kwargs:
            raise TypeError(
                "api_base cannot change per call (it picks the route); use lm.copy(api_base=...) for "
                "another endpoint"
            )
        names = [k for k in kwargs if k in CONNECTION_SETTINGS or is_secret_name(k)]
        if not names:
            return self._api_key, self._connection
        api_key, connection = self._api_key, dict(self._connection)
        for name in names:
            value = kwargs.pop(name)
            if name == "api_key":
                api_key = Credential("api_key", value, secret=True)
            else:
                connection[name] = Credential(name, value)
        return api_key, connection

    def prepare(self, messages: list[Message] | str, **kwargs: Any) -> Call:
        """The call ``self(messages, **kwargs)`` would make, checked and built without any I/O
        (invalid settings fail here); see :mod:`sigform.lm.lifecycle` for sending it."""
        return self._prepare(messages, kwargs)

    def _prepare(self, messages: list[Message] | str, kwargs: dict[str, Any]) -> Call:
        """:meth:`prepare` taking (and consuming) the keyword arguments' own dict."""
        started = time.perf_counter()
        options = self.options
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif not isinstance(messages, list) or not all(
            isinstance(m, (dict, Mapping)) and "role" in m for m in messages
        ):
            raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts (or a string)")
        if kwargs:  # before credentials are taken out: `max_token` is a secret's name
            check_spelling(kwargs, self.model)
        control = {k: kwargs.pop(k) for k in CONTROL & kwargs.keys()}
        if "extra_headers" in kwargs:  # sent as headers; never a recorded request parameter
            extra = _header_dict(kwargs.pop("extra_headers"))
            control["headers"] = {**extra, **(control.get("headers") or {})}
        api_key, connection = self._call_credentials(kwargs) if kwargs else (self._api_key, self._connection)
        route = self._current_route()
        prompt = None
        if (options.model_type or route.model_type) == "text":  # text completions (sigform.lm.text_mode)
            prompt = prompt_of(messages)
        elif control.get("prompt_cache", options.prompt_cache):  # adapters mark system+demos themselves
            messages = mark_prefix(messages, _leading_system(messages), route.provider, route.model)
        params = applicable(
            route.schema,
            {**self.kwargs, **kwargs} if self.kwargs else kwargs,
            self.model,
            strict=options.strict,
            warned=self._warned,
            openai_reasoning=route.openai_reasoning,
        )
        # programs number their attempts (BestOfN, Refine) so each gets its own cache entry; the
        # number is sigform's, never the provider's
        rollout_id = params.pop("rollout_id", None)
        n = int(params.pop("n", 1) or 1)
        if "response_format" in params:
            params["response_format"] = response_format_dict(params["response_format"])
        for name in ("stop", "tools"):
            if isinstance(params.get(name), tuple):
                params[name] = list(params[name])
        params = nest_dotted(params)
        if prompt is not None:
            params = completion_params(params, grammar=route.gbnf)
        timeout = control.get("timeout", options.timeout)
        num_retries = control.get("num_retries", options.num_retries)
        if "timeout" in control or "num_retries" in control:
            check_limits(num_retries=num_retries, timeout=timeout)
        extra_headers = control.get("headers")
        headers = {**options.headers, **extra_headers} if extra_headers else dict(options.headers)
        request = Request(
            route.model,
            route.provider,
            messages,
            params,
            route.api_base,
            api_key,
            connection,
            headers,
            timeout,
            prompt,
        )
        use_cache = control.get("cache")
        if use_cache is None:
            use_cache = options.cache and get_setting("cache", True)
        key = None
        if use_cache:
            keyed = request.with_n(n)
            if route.refresh is not None:  # a moving endpoint (local server port) is not its identity
                keyed = replace(keyed, api_base=None)
            key = cache_key(keyed, rollout_id=rollout_id)
        policy = _policy(num_retries, options.retry_delay)
        route = limited_route(route, limiter_of(self))  # each request attempt waits for the limit
        return Call(self, route, request, n, key, policy, self._ledger, started)

    # -- calls -----------------------------------------------------------------------------

    def __call__(self, messages: list[Message] | str, **kwargs: Any) -> list[Completion]:
        """Send ``messages``; return ``n`` completions (default 1)."""
        return self._prepare(messages, kwargs).run()

    async def acall(self, messages: list[Message] | str, **kwargs: Any) -> list[Completion]:
        """Async :meth:`__call__` (native async I/O, no thread per call)."""
        return await self._prepare(messages, kwargs).arun()

    # -- streaming -------------------------------------------------------------------------

    def stream(
        self, messages: list[Message] | str, **kwargs: Any
    ) -> Iterator[StreamDelta | list[Completion]]:
        """Yield :class:`StreamDelta` pieces as they arrive, then the final ``list[Completion]``.

        Retryable failures are retried only before the first piece arrived. With ``n > 1`` the
        candidates the provider does not stream in the one request (no ``n`` support, or fewer
        choices than asked) are fetched by plain concurrent requests after the stream and yielded
        whole, one piece per field with their own ``index`` (see :mod:`sigform.lm.streaming_run`)."""
        from sigform.lm.streaming_run import run_stream

        return run_stream(self._prepare(messages, kwargs))  # invalid settings fail here, not when iterated

    def astream(
        self, messages: list[Message] | str, **kwargs: Any
    ) -> AsyncIterator[StreamDelta | list[Completion]]:
        """Async :meth:`stream`."""
        from sigform.lm.streaming_run import arun_stream

        return arun_stream(self._prepare(messages, kwargs))


@functools.lru_cache(maxsize=64)
def _policy(num_retries: int, retry_delay: float) -> RetryPolicy:
    """The (immutable) retry policy for these settings, built once: every call needs one."""
    return RetryPolicy(num_retries=num_retries, base_delay=retry_delay)


def _header_dict(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"extra_headers must be a dict of header names to values, got {type(value).__name__}")
    return dict(value)


def _leading_system(messages: list[Message]) -> int:
    """How many leading system messages there are (the stable prefix of a plain request)."""
    n = 0
    while n < len(messages) and messages[n].get("role") == "system":
        n += 1
    return n
