"""What a saved program may say about its LM, and how a loader rebuilds one from it.

A saved program is shared data, so its LM entry is untrusted. It may name the model, a literal
endpoint URL (without credentials), known request parameters (``temperature``, ...), non-secret
connection settings given as literals (``api_version``, ``organization`` ...) and sigform's own
options (cache, retries, timeout ...). It never carries a credential: no API key, no secret
connection setting, no ``env:``/``cmd:`` reference (a file that does is read with those fields
ignored and a warning). Rebuilding never runs a command or reads an environment variable: every
value from the file is taken as a literal. The credential comes from the loader: ``api_key=``,
else the configured LM's when it talks to the same model at the same endpoint. An LM whose
endpoint the file names and that got no credential that way sends a placeholder key, so the
provider's ambient key (``OPENAI_API_KEY``, ...) never goes to an address the file chose.

An endpoint URL that carried credentials (``https://user:pass@host/v1?api_key=...``) is saved
without them, with ``api_base_credentials_removed`` naming which parts went (``"user info"``,
``"query parameter api_key"``; never a value). Loading takes the whole URL from the configured
LM when it is the same model at the same endpoint once stripped (the caller's own URL), and
otherwise warns that requests go without those credentials, so that a 401 has an explanation.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sigform.errors import ProgramStateError
from sigform.excerpt import shorten
from sigform.lm.credentials import (
    Credential,
    is_secret_name,
    strip_url_credentials,
    url_credential_parts,
    url_secrets,
)
from sigform.lm.options import LMOptions
from sigform.lm.params import BASE_SPECS

if TYPE_CHECKING:
    from sigform.lm.model import LM

REMOVED = "api_base_credentials_removed"  # which parts of the endpoint URL a save left out
# what that list may hold (a file is untrusted: its text reaches a warning only in these forms)
_REMOVED_PART = re.compile(r"user info|a query parameter|query parameter [A-Za-z0-9_.-]{1,40}")

IGNORED_KEY = "sk-no-key-required"  # sent instead of any ambient key to an endpoint a file named
# connection settings a file may set (as literals): none of them is a secret or an address
_SAFE_CONNECTION = frozenset({"api_version", "organization", "project", "region_name", "aws_region_name"})
# sigform options a saved LM may carry: (saved always or only when set, the types a value may have)
_OPTIONS = LMOptions.saved_fields()
# per-predictor options a saved program may carry besides request parameters
_PREDICTOR_CONTROL = frozenset({"cache", "num_retries", "timeout", "prompt_cache", "rollout_id"})


class SavedStateWarning(UserWarning):
    """Part of a saved program was ignored: a credential, a reference or an unsafe setting."""


def _warn(where: str, what: str) -> None:
    warnings.warn(f"{where}: {what}", SavedStateWarning, stacklevel=4)


def _is_reference(value: object) -> bool:
    return isinstance(value, str) and value.strip().startswith(("env:", "cmd:"))


def lm_state(lm: LM) -> dict[str, Any]:
    """The JSON-ready description of ``lm`` a saved program keeps: never a credential or a
    reference to one (the endpoint URL loses its ``user:pass@`` and ``?key=`` parts)."""
    state: dict[str, object] = {"model": lm.model, "kwargs": dict(lm.kwargs)}
    if lm._api_base is not None and lm._api_base.state() is not None:
        state["api_base"] = lm._api_base.state()
        removed = url_credential_parts(lm._api_base.get())
        if removed:
            state[REMOVED] = removed
    conn = {
        k: c.state() for k, c in lm._connection.items() if k in _SAFE_CONNECTION and c.state() is not None
    }
    if conn:
        state["connection"] = conn
    for name, (how, _) in _OPTIONS.items():
        value = getattr(lm.options, name)
        if how == "always" or (value is not None and value != {}):
            state[name] = dict(value) if isinstance(value, Mapping) else value
    return state


def credential_fields(state: Mapping[str, Any]) -> list[str]:
    """The credential fields an (old or hostile) saved LM entry carries, by name only."""
    found = [name for name in state if name != "kwargs" and name != "connection" and is_secret_name(name)]
    found += [name for name in ("api_base",) if _is_reference(state.get(name))]
    if isinstance(state.get("api_base"), str) and url_secrets(state["api_base"]):
        found.append("api_base credentials")
    for group in ("connection", "kwargs"):
        entries = state.get(group)
        if isinstance(entries, Mapping):
            found += [
                f"{group}.{k}" for k, v in entries.items() if is_secret_name(str(k)) or _is_reference(v)
            ]
    return found


def request_options(config: Mapping[str, object], where: str) -> dict[str, Any]:
    """The saved options a loader applies: known request parameters and sigform's per-call
    options; anything else (a credential, a header, an endpoint or an unknown name that a provider
    library might read as one) is dropped with a warning."""
    kept: dict[str, object] = {}
    dropped = []
    for name, value in config.items():
        if (
            isinstance(name, str)
            and (name in BASE_SPECS or name in _PREDICTOR_CONTROL)
            and not _is_reference(value)
        ):
            kept[name] = value
        else:
            dropped.append(str(name))
    if dropped:
        _warn(
            where,
            f"ignored saved options {', '.join(map(repr, dropped))}: a saved program may set only "
            "request parameters; set others in code",
        )
    limits = {name: kept[name] for name in ("num_retries", "timeout") if name in kept}
    if limits:  # bounded as in code: num_retries=10**9 from a file must not retry without end
        from sigform.errors import ParameterError
        from sigform.lm.retry import check_limits

        try:
            check_limits(**limits)
        except ParameterError as exc:
            raise ProgramStateError(f"{where}: saved {exc}") from None
    return kept


def _option(state: Mapping[str, object], name: str, where: str) -> object:
    value = state[name]
    types = _OPTIONS[name][1]
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if not ok:
        expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise ProgramStateError(f"{where}: saved LM option {name!r} must be {expected}, got {value!r}")
    return value


def lm_from_state(state: Mapping[str, Any], *, where: str = "lm", api_key: Any = None) -> LM:
    """An LM rebuilt from :func:`lm_state` output of an untrusted file (see the module doc)."""
    from sigform.lm.model import LM
    from sigform.settings import get_setting

    if not isinstance(state, Mapping):
        raise ProgramStateError(f"{where}: malformed saved LM {state!r}")
    model = state.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ProgramStateError(f"{where}: the saved LM has no model name")
    model = _printable(model, "model", where)
    ignored = credential_fields(state)
    if ignored:
        _warn(
            where,
            f"ignored credential fields of the saved LM ({', '.join(ignored)}): saved programs "
            "never carry credentials; pass api_key= to load() or configure an LM",
        )
    args: dict[str, Any] = {}
    for name in _OPTIONS:
        if name in state and name != "capabilities":  # capabilities: checked below
            args[name] = _option(state, name, where)
    capabilities = state.get("capabilities")
    if capabilities is not None:
        if not isinstance(capabilities, Mapping) or not all(
            isinstance(v, bool) for v in capabilities.values()
        ):
            raise ProgramStateError(f"{where}: saved LM capabilities must map feature names to true/false")
        args["capabilities"] = {str(k): v for k, v in capabilities.items()}
    kwargs = state.get("kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ProgramStateError(f"{where}: saved LM kwargs must be a mapping")
    args.update(request_options({k: v for k, v in kwargs.items() if k not in _PREDICTOR_CONTROL}, where))
    connection = state.get("connection") or {}
    if not isinstance(connection, Mapping):
        raise ProgramStateError(f"{where}: saved LM connection settings must be a mapping")
    for name, value in connection.items():
        if name in _SAFE_CONNECTION and isinstance(value, str) and not _is_reference(value):
            value = _printable(value, f"connection setting {name}", where)
            args[name] = Credential.literal(name, value, secret=False)
        elif not is_secret_name(str(name)) and not _is_reference(value):
            _warn(where, f"ignored saved connection setting {name!r} (not one a saved program may set)")
    api_base = state.get("api_base")
    if api_base is not None and not (isinstance(api_base, str) and api_base.strip()):
        raise ProgramStateError(f"{where}: saved LM api_base must be a URL string, got {api_base!r}")
    if api_base is not None and not _is_reference(api_base):
        url = _printable(strip_url_credentials(api_base), "api_base", where)
        args["api_base"] = Credential.literal("api_base", url, secret=False)
    removed = _removed_parts(state, where)
    saved_base = args["api_base"].get() if "api_base" in args else None
    if api_key is not None:
        args["api_key"] = api_key
    else:
        configured = get_setting("lm")
        configured_base = configured.api_base if isinstance(configured, LM) else None
        if (
            isinstance(configured, LM)
            and configured.model == model
            and (strip_url_credentials(configured_base) if configured_base else None) == saved_base
        ):
            args["api_key"] = configured._api_key  # the caller's own credential, same endpoint
            args.update({k: c for k, c in configured._connection.items() if k not in args})
            if configured._api_base is not None:
                args["api_base"] = configured._api_base  # with the caller's URL credentials
            removed = []
        elif "api_base" in args:
            args["api_key"] = Credential.literal("api_key", IGNORED_KEY, secret=True)
    if removed and saved_base is not None and api_key is None:
        _warn(
            where,
            f"the saved api_base {saved_base} lost its credentials ({', '.join(removed)}) on save "
            "(saved programs never carry credentials), so requests to it go without them and may "
            "be refused: give the predictor its LM in code (lm=sf.LM(..., api_base=...)), "
            "configure an LM for this model and endpoint (sf.configure(lm=...)), or pass api_key= "
            "to load() if the endpoint takes the key as a header",
        )
    return LM(model, **args)


def _printable(value: str, what: str, where: str) -> str:
    """``value`` if it has no control or invisible characters: a file's URL reaches a warning and
    its settings reach request headers, where a newline or an escape sequence could forge log
    lines, repaint the terminal or add a header."""
    if value.isprintable():
        return value
    raise ProgramStateError(
        f"{where}: saved LM {what} holds control or invisible characters ({shorten(ascii(value), 60)}); "
        "a hand-edited file? Write it as plain text"
    )


def _removed_parts(state: Mapping[str, object], where: str) -> list[str]:
    """The saved list of credential parts removed from the endpoint URL, checked."""
    removed = state.get(REMOVED)
    if removed is None:
        return []
    if not isinstance(removed, list) or not all(
        isinstance(part, str) and _REMOVED_PART.fullmatch(part) for part in removed
    ):
        raise ProgramStateError(
            f"{where}: saved LM {REMOVED} must list 'user info' or 'query parameter NAME' entries"
        )
    return list(dict.fromkeys(removed))[:8]
