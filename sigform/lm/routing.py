"""Which backend serves a model, under which provider name, and what the model supports.

Resolved once per LM, at its first call (so constructing an LM never imports litellm):

* the fast path (:mod:`sigform.lm.transport`) for OpenAI-compatible endpoints: ``openai/...`` with an
  ``api_base``, ``hosted_vllm/...``, ``lm_studio/...``, ``llamafile/...`` and the embedded
  local model (``"local"``), unless ``fast_path=False``. The fast path speaks chat completions
  only, so models litellm sends elsewhere stay on litellm: the Responses API
  (``openai/responses/...``, and OpenAI models served only there, like ``o3-pro``), images,
  audio, embeddings;
* litellm for everything else.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from sigform.errors import LMError, ProviderError
from sigform.lm.backend import Backend
from sigform.lm.params import ParamSpec, build_schema
from sigform.lm.request import Request

LOCAL_MODEL = "openai/gemma-3-270m"
# providers served through an OpenAI-compatible endpoint even without an explicit api_base
BASELESS_FAST = frozenset({"lm_studio", "llamafile"})
# litellm's explicit sub-route markers after the provider prefix (``openai/responses/gpt-5``)
_NON_CHAT_ROUTES = ("responses/",)


@dataclass(frozen=True)
class Route:
    """How requests for one LM are sent."""

    backend: Backend  # the fast path's, litellm's, or the one given to the LM
    model: str  # the model string handed to the backend
    provider: str
    api_base: str | None
    schema: dict[str, ParamSpec]
    supports_n: bool
    openai_reasoning: bool = False
    # for an endpoint that can move (the local server, replaced when it dies): the current
    # api_base, checked before every request and retry
    refresh: Callable[[], str] | None = None
    # for an endpoint that can die (the local server): the reason behind a failed request, if known
    diagnose: Callable[[], LMError | None] | None = None
    # "text" for a model without a chat template (the embedded base model), "chat", or None:
    # not known (chat)
    model_type: str | None = None
    # whether the endpoint takes a GBNF ``grammar`` (llama-cpp-python's server: the embedded one)
    gbnf: bool = False

    @property
    def fast(self) -> bool:
        return self.backend.name == "openai-compatible"


def current(route: Route) -> Route:
    """``route`` aimed at its endpoint's current address (itself unless the endpoint moved)."""
    if route.refresh is None:
        return route
    base = route.refresh()
    return route if base == route.api_base else replace(route, api_base=base)


def rebased(route: Route, req: Request) -> Request:
    """``req`` aimed at the endpoint's current address, before a retry (a local server that died
    under the request has been replaced by then)."""
    if route.refresh is None:
        return req
    base = route.refresh()
    return req if base == req.api_base else replace(req, api_base=base)


def explained(route: Route, err: BaseException) -> BaseException:
    """``err``, or the endpoint's own account of it once retries are spent (a connection error
    from a local server that crashed becomes the crash: signal, exit code, log)."""
    if route.diagnose is None or not isinstance(err, ProviderError):
        return err
    return route.diagnose() or err


def _prefix(model: str) -> str:
    prefix, sep, _ = model.partition("/")
    return prefix if sep else ""


def fast_path_eligible(model: str, api_base: str | None) -> bool:
    """Whether ``model`` (with ``api_base``) is an OpenAI-compatible endpoint."""
    return _eligible(model, bool(api_base))


@functools.lru_cache(maxsize=256)
def _eligible(model: str, has_base: bool) -> bool:
    # memoised: LM.supports asks on every call; the answer depends on the model name only
    from sigform.lm.transport import FAST_PROVIDERS

    if model == "local":
        return True
    prefix = _prefix(model)
    eligible = prefix in FAST_PROVIDERS and (has_base or prefix in BASELESS_FAST)
    return eligible and speaks_chat_completions(model)


def speaks_chat_completions(model: str) -> bool:
    """False when litellm would send ``model`` to another API than chat completions (the
    Responses API, images, audio, ...), which the fast path cannot speak."""
    prefix, _, rest = model.partition("/")
    if rest.startswith(_NON_CHAT_ROUTES):
        return False
    if prefix == "openai":
        from sigform.lm.model_names import CHAT_MODES, openai_model_mode

        mode = openai_model_mode(rest)
        return mode is None or mode in CHAT_MODES
    return True


def resolve_route(
    model: str,
    api_base: str | None,
    fast_path: bool | None,
    backend: Backend | None = None,
    given_type: str | None = None,
) -> Route:
    """Pick the backend for ``model``; ``"local"`` starts (or finds) the embedded model server.
    A ``backend`` given to the LM is used as it is, passed every setting, like an unknown
    OpenAI-compatible server. ``given_type`` is the LM's ``model_type`` option: unless it is
    "chat", another OpenAI-compatible server is asked what it serves (``text_mode.server_facts``)."""
    if backend is not None:
        named = _prefix(model) or "openai"
        return Route(backend, model, named, api_base, build_schema(model, None), supports_n=True)
    provider = "local" if model == "local" else None
    send_model = model
    refresh: Callable[[], str] | None = None
    diagnose: Callable[[], LMError | None] | None = None
    if model == "local":
        import sigform.local  # the local-model helper's module; imported only when asked for

        # cheap while the server runs; a dead server is replaced (on another port)
        refresh = sigform.local.ensure_server
        api_base = refresh()
        diagnose = sigform.local.death_report
        send_model = getattr(sigform.local, "LITELLM_MODEL", LOCAL_MODEL)
    model_type = None
    gbnf = False
    if model == "local" or "sigform.local" in sys.modules:  # a server sigform.local started
        import sigform.local

        model_type = sigform.local.model_type(api_base)
        gbnf = model_type is not None
    if model_type is None and api_base and given_type != "chat" and fast_path_eligible(model, api_base):
        from sigform.lm.text_mode import server_facts  # another server: asked once what it is

        facts = server_facts(send_model, api_base, text=given_type == "text")
        model_type, gbnf = facts["model_type"], facts["grammar"]
    use_fast = fast_path if fast_path is not None else fast_path_eligible(model, api_base)
    if use_fast:
        from sigform.lm.transport import FAST_PROVIDERS, get_backend

        prefix = _prefix(send_model)
        if provider is None:
            if prefix and prefix not in FAST_PROVIDERS:
                raise ValueError(
                    f"fast_path=True needs an OpenAI-compatible model (openai/..., hosted_vllm/..., local); "
                    f"{model!r} belongs to provider {prefix!r}"
                )
            if not speaks_chat_completions(send_model):
                raise ValueError(
                    f"fast_path=True speaks chat completions only; litellm sends {model!r} to another "
                    "API (e.g. the Responses API): leave fast_path unset"
                )
            provider = prefix or "openai"
        # an unknown OpenAI-compatible server: every setting is passed on, the server decides
        return Route(
            get_backend(),
            send_model,
            provider,
            api_base,
            build_schema(model, None),
            supports_n=True,
            refresh=refresh,
            diagnose=diagnose,
            model_type=model_type,
            gbnf=gbnf,
        )

    from sigform.lm import litellm_backend as lb

    provider = lb.provider_of(send_model, api_base)
    supported = lb.supported_params(send_model, provider)
    reasoning = lb.is_openai_reasoning(send_model, provider)
    return Route(
        lb.get_backend(),
        send_model,
        provider,
        api_base,
        build_schema(model, supported, openai_reasoning=reasoning),
        supports_n=supported is None or "n" in supported,
        openai_reasoning=reasoning,
        refresh=refresh,
        diagnose=diagnose,
        model_type=model_type,
        gbnf=gbnf,
    )
