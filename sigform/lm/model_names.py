"""Model names checked when an LM is built, and the API a model is served by, without importing litellm.

A typo such as ``"gpt-4o-minii"`` used to fail only at the first call, seconds later, with
litellm's "LLM Provider NOT provided" text. litellm ships its provider list (the ``LlmProviders``
enum, read here as text) and its model map (JSON, searched as text), so:

* an unknown provider prefix (``"opnai/gpt-4o"``) is an error, with a did-you-mean;
* a name without a provider that litellm does not know is an error (litellm could not route it),
  with a did-you-mean and how to name the provider;
* an unknown name on a known provider warns once per name (new models appear daily; the call may
  still work), with a did-you-mean from that provider's models. With an ``api_base`` (your own
  server) any name is accepted.

When litellm is not installed, or its files are not where this version keeps them, nothing is
checked: the call reports what it finds.

The fast path speaks only chat completions. Some OpenAI models are served by another API
(``o3-pro``, ``gpt-5-codex``: the Responses API; ``dall-e-3``: images): :func:`openai_model_mode`
reads the model's ``mode`` from the map as litellm would route it, decoding only that entry.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import threading
import warnings

# modes litellm sends as chat-completions requests
CHAT_MODES = frozenset({"chat"})
_MAP_FILE = "model_prices_and_context_window_backup.json"
_PROVIDERS_FILE = os.path.join("types", "utils.py")
_ENUM_HEAD = "class LlmProviders(str, Enum):"
_ENUM_MEMBER = re.compile(r'^    [A-Z0-9_]+ = "([^"]+)"', re.MULTILINE)
_MAP_KEY = re.compile(r'^    "([^"]+)": \{', re.MULTILINE)
_warned: set[str] = set()
_lock = threading.Lock()


class UnknownModelWarning(UserWarning):
    """The model name is not in litellm's model map for its provider (it may be new)."""


@functools.lru_cache(maxsize=2)
def _litellm_file(name: str) -> str:
    """The text of a file of the installed litellm ("" when litellm or the file is missing)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.origin:
        return ""
    try:
        with open(os.path.join(os.path.dirname(spec.origin), name), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def map_text() -> str:
    """The text of litellm's bundled model map ("" when litellm is not installed)."""
    return _litellm_file(_MAP_FILE)


@functools.lru_cache(maxsize=256)
def openai_model_mode(name: str) -> str | None:
    """litellm's ``mode`` for the OpenAI model ``name`` (``"chat"``, ``"responses"``,
    ``"image_generation"``, ...); None for a model litellm does not know (e.g. a vLLM model)."""
    text = map_text()
    key = json.dumps(name) + ":"
    start = text.find(key)
    while start != -1:
        brace = text.find("{", start + len(key))
        if brace != -1 and not text[start + len(key) : brace].strip():
            try:
                entry, _ = json.JSONDecoder().raw_decode(text, brace)
            except ValueError:
                return None
            if isinstance(entry, dict) and entry.get("litellm_provider") == "openai":
                mode = entry.get("mode")
                return mode if isinstance(mode, str) else None
        start = text.find(key, start + 1)
    return None


@functools.lru_cache(maxsize=1)
def _providers() -> frozenset[str]:
    """litellm's provider names, read from the text of its ``LlmProviders`` enum."""
    text = _litellm_file(_PROVIDERS_FILE)
    start = text.find(_ENUM_HEAD)
    if start == -1:
        return frozenset()
    end = text.find("\n\n\n", start)
    return frozenset(_ENUM_MEMBER.findall(text[start : end if end != -1 else len(text)]))


def _known(name: str) -> bool:
    return f'\n    "{name}": {{' in map_text()


@functools.lru_cache(maxsize=1)
def _by_provider() -> dict[str, tuple[str, ...]]:
    """Model names per provider from the map (provider prefixes stripped); parsed only when a name
    is not found, to suggest one."""
    try:
        entries = json.loads(map_text() or "{}")
    except ValueError:
        return {}
    out: dict[str, list[str]] = {}
    for key, entry in entries.items():
        if isinstance(entry, dict) and isinstance(entry.get("litellm_provider"), str):
            provider = entry["litellm_provider"]
            out.setdefault(provider, []).append(key.removeprefix(f"{provider}/"))
    return {k: tuple(v) for k, v in out.items()}


def _suggest(word: str, candidates: list[str] | tuple[str, ...]) -> str | None:
    import difflib  # only on the unknown-name path

    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.8)
    return found[0] if found else None


def check_model_name(model: str, *, api_base_given: bool) -> None:
    """Raise ``ValueError`` for a model litellm cannot route; warn once for a name unknown to its
    provider. ``"local"`` and names served from an ``api_base`` are not checked."""
    if model == "local" or not map_text():
        return
    provider, sep, name = model.partition("/")
    if not sep:
        if ":" in model or _known(model):  # litellm's own forms such as "ft:gpt-4o-mini:org::id"
            return
        bare = ["local", *(k for k in _MAP_KEY.findall(map_text()) if "/" not in k)]  # "local": sigform's own
        close = _suggest(model, bare)
        hint = f"did you mean {close!r}? " if close else ""
        raise ValueError(
            f"unknown model {model!r}: litellm routes a name without a provider only when it knows "
            f"it; {hint}Otherwise name the provider, e.g. 'openai/{model}', or 'hosted_vllm/{model}' "
            "with api_base= for your own server"
        )
    providers = _providers()
    if providers and provider not in providers:
        close = _suggest(provider, sorted(providers))
        hint = f"; did you mean {close + '/' + name!r}?" if close else " (litellm does not know it)"
        raise ValueError(f"unknown provider {provider!r} in the model {model!r}{hint}")
    if api_base_given or _known(model) or _known(name):
        return
    catalogue = _by_provider().get(provider)
    if not catalogue:  # a provider whose models litellm does not list (ollama, vllm, ...)
        return
    with _lock:
        if model in _warned:
            return
        _warned.add(model)
    close = _suggest(name, catalogue)
    hint = f"did you mean {provider + '/' + close!r}? " if close else ""
    warnings.warn(
        f"{model!r} is not in litellm's model map for {provider!r}: {hint}(a new model may still work)",
        UnknownModelWarning,
        stacklevel=3,
    )
