"""The parameter schema: what each request setting means, which values are valid, when it applies.

Every LM exposes ``lm.param_schema`` (a dict name -> :class:`ParamSpec`). A spec gives the type,
default, allowed choices, a validation rule and a condition saying whether the setting applies
to the chosen model. Which settings apply comes from litellm's knowledge of each provider
(``litellm.get_supported_openai_params``) plus a few rules it encodes in code (OpenAI reasoning
models accept only ``temperature=1``). Invalid values raise :class:`ParameterError` before any
network call; settings that do not apply are dropped with one warning per LM (an error when the
LM is ``strict``). Names not in the schema are passed to the provider untouched, and dotted
names (``reasoning.effort``) become nested request fields (``{"reasoning": {"effort": ...}}``).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from sigform.errors import ParameterError
from sigform.excerpt import shorten

__all__ = [
    "BASE_SPECS",
    "ParamSpec",
    "ParameterError",
    "ParameterWarning",
    "applicable",
    "build_schema",
    "misspelled",
    "nest_dotted",
]


def _number(lo: float | None, hi: float | None) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        return math.isfinite(v) and (lo is None or v >= lo) and (hi is None or v <= hi)

    return check


def _stop_ok(v: object) -> bool:
    if isinstance(v, str):
        return v != ""
    return isinstance(v, (list, tuple)) and all(isinstance(s, str) and s for s in v)


_NUM = (int, float)
_REASONING_CHOICES = ("none", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class ParamSpec:
    """One request setting.

    ``applies`` is the answer for this LM's model; ``condition`` says in words when the setting
    applies; ``rule`` says in words which values are valid. ``path`` is where the value goes in
    the request body (dotted names are nested).
    """

    name: str
    type: tuple[type, ...]
    default: Any = None
    choices: tuple[Any, ...] | None = None
    rule: str | None = None
    condition: str = "always"
    applies: bool = True
    check: Callable[[Any], bool] | None = None
    only_values: tuple[Any, ...] | None = None  # the model accepts only these values (if set)

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))

    def validate(self, value: object, model: str | None = None) -> Any:
        """Return ``value`` if valid; else raise :class:`ParameterError` naming the setting."""
        if value is None:
            return value
        where = f" for {model}" if model else ""
        if (isinstance(value, bool) and bool not in self.type) or not isinstance(value, self.type):
            names = " or ".join(t.__name__ for t in self.type)
            raise ParameterError(
                f"setting `{self.name}`{where} expects {names}, "
                f"got {type(value).__name__} {shorten(value, 60)}"
            )
        if self.choices is not None and value not in self.choices:
            raise ParameterError(
                f"setting `{self.name}`{where} must be one of {', '.join(map(repr, self.choices))}; "
                f"got {shorten(value, 60)}"
            )
        if self.check is not None and not self.check(value):
            raise ParameterError(
                f"setting `{self.name}`{where} must satisfy {self.rule}; got {shorten(value, 60)}"
            )
        return value

    def accepts(self, value: object) -> bool:
        """Whether the model takes this value (False when the setting does not apply to it)."""
        if not self.applies:
            return False
        return self.only_values is None or value in self.only_values


def _spec(name: str, types: tuple[type, ...], rule: str | None = None, **kw: Any) -> ParamSpec:
    return ParamSpec(name=name, type=types, rule=rule, **kw)


BASE_SPECS: dict[str, ParamSpec] = {
    s.name: s
    for s in (
        _spec("temperature", _NUM, "0 <= temperature <= 2", check=_number(0, 2)),
        _spec("top_p", _NUM, "0 <= top_p <= 1", check=_number(0, 1)),
        _spec("max_tokens", (int,), "an integer >= 1", check=_number(1, None)),
        _spec("max_completion_tokens", (int,), "an integer >= 1", check=_number(1, None)),
        _spec("n", (int,), "an integer >= 1", default=1, check=_number(1, None)),
        _spec("stop", (str, list, tuple), "a non-empty string or a list of them", check=_stop_ok),
        _spec("presence_penalty", _NUM, "-2 <= presence_penalty <= 2", check=_number(-2, 2)),
        _spec("frequency_penalty", _NUM, "-2 <= frequency_penalty <= 2", check=_number(-2, 2)),
        _spec("seed", (int,), "an integer"),
        _spec("logprobs", (bool,), "True or False"),
        _spec("top_logprobs", (int,), "0 <= top_logprobs <= 20", check=_number(0, 20)),
        _spec("reasoning_effort", (str,), None, choices=_REASONING_CHOICES),
        _spec("reasoning.effort", (str,), None, choices=_REASONING_CHOICES),
        _spec("verbosity", (str,), None, choices=("low", "medium", "high")),
        _spec("response_format", (dict, type), "a dict like {'type': 'json_object'} or a pydantic model"),
        _spec("tools", (list, tuple), "a list of tool definitions"),
        _spec("tool_choice", (str, dict), "'auto', 'none', 'required' or a tool selector"),
        _spec("parallel_tool_calls", (bool,), "True or False"),
        _spec("logit_bias", (dict,), "a dict token -> bias"),
        _spec("thinking", (dict,), "a dict like {'type': 'enabled', 'budget_tokens': 1024}"),
        _spec("user", (str,), "a string"),
    )
}

# settings whose support sigform provides itself, whatever the provider says
_ALWAYS = frozenset({"n"})
# the litellm name that tells whether a dotted setting applies
_SUPPORT_ALIAS = {"reasoning.effort": "reasoning_effort"}


def build_schema(
    model: str,
    supported: frozenset[str] | None,
    *,
    openai_reasoning: bool = False,
) -> dict[str, ParamSpec]:
    """The schema for ``model``: ``supported`` is the provider's supported set (None = unknown,
    everything applies); ``openai_reasoning`` marks OpenAI reasoning models (temperature=1 only)."""
    out: dict[str, ParamSpec] = {}
    for name, spec in BASE_SPECS.items():
        if name in _ALWAYS or supported is None:
            out[name] = spec
            continue
        ok = _SUPPORT_ALIAS.get(name, name) in supported
        if name == "max_completion_tokens" and "max_tokens" in supported:
            ok = True
        spec = replace(
            spec,
            applies=ok,
            condition=f"supported by {model}" if ok else f"not supported by {model} (per litellm)",
        )
        if ok and openai_reasoning and name in ("temperature", "top_p"):
            spec = replace(
                spec,
                only_values=(1, 1.0),
                condition=f"{model} is a reasoning model: only {name}=1 applies",
            )
        out[name] = spec
    return out


# sigform's per-call options (steering sigform, never sent)
CONTROL = frozenset({"cache", "num_retries", "timeout", "headers", "prompt_cache", "prune"})
# where a credential goes: a misspelled one (`api_kye=`) was sent to the provider as a request
# field, and kept in the history and the cache key
_CREDENTIAL_NAMES = ("api_key", "api_base")


@functools.lru_cache(maxsize=256)
def misspelled(name: str, options: frozenset[str] = frozenset()) -> str | None:
    """The setting ``name`` is surely a misspelling of (``temprature`` -> ``temperature``), else
    None. Names sigform does not know are passed to the provider as they are (``top_k=40``,
    ``min_p``): only a name this close to one of sigform's is refused (``top_k`` is not
    ``top_p``), or close to a credential's name; ``options`` are more known names."""
    import difflib  # only for names that are no request setting

    known = BASE_SPECS.keys() | CONTROL | options
    if name in known or name in _CREDENTIAL_NAMES:
        return None
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.9)
    close = close or difflib.get_close_matches(name, _CREDENTIAL_NAMES, n=1, cutoff=0.8)
    return close[0] if close else None


def check_spelling(names: Any, where: str, options: frozenset[str] = frozenset()) -> None:
    """Raise :class:`ParameterError` for the first of ``names`` that is :func:`misspelled`."""
    for name in names:
        if name not in BASE_SPECS and (close := misspelled(name, options)) is not None:
            raise ParameterError(
                f"{where}: unknown setting `{name}`; did you mean `{close}`? (a provider's own "
                "setting that sigform does not know, such as top_k=40, is sent as it is)"
            )


class ParameterWarning(UserWarning):
    """A request setting does not apply to the model and was dropped."""


def applicable(
    schema: Mapping[str, ParamSpec],
    params: Mapping[str, object],
    model: str,
    *,
    strict: bool,
    warned: set[str],
    openai_reasoning: bool,
) -> dict[str, Any]:
    """``params`` without None values and the settings that do not apply to ``model``: each
    dropped with one warning per name in ``warned`` (an error when ``strict``); invalid values
    raise :class:`ParameterError`."""
    out: dict[str, object] = {}
    for name, value in params.items():
        spec = schema.get(name)
        if spec is None or value is None:
            if value is not None:
                out[name] = value
            continue
        spec.validate(value, model)
        if spec.accepts(value) or (
            spec.applies and openai_reasoning and params.get("reasoning_effort") == "none"
        ):
            out[name] = value
            continue
        reason = spec.condition if spec.applies else f"`{name}` is {spec.condition}"
        if strict:
            raise ParameterError(f"setting `{name}`={value!r} does not apply: {reason}")
        if name not in warned:
            warned.add(name)
            warnings.warn(
                f"{model}: dropping setting `{name}`={value!r} ({reason})", ParameterWarning, stacklevel=4
            )
    return out


def nest_dotted(params: Mapping[str, Any]) -> dict[str, Any]:
    """Turn ``{"reasoning.effort": "high"}`` into ``{"reasoning": {"effort": "high"}}`` (merging)."""
    if not any("." in k for k in params):
        return dict(params)
    out: dict[str, Any] = {}
    for key, value in params.items():
        if "." not in key:
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = {**value, **out[key]}
            else:
                out[key] = value
            continue
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {} if child is None else child
                if not isinstance(child, dict):
                    raise ParameterError(f"setting `{key}` conflicts with non-dict setting `{part}`")
                node[part] = child
            else:
                child = dict(child)
                node[part] = child
            node = child
        node[parts[-1]] = value
    return out
