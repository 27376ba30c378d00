"""Which API a known OpenAI model is served by, read without importing litellm.

The fast path speaks only chat completions. Some OpenAI models are served by another API
(``o3-pro``, ``gpt-5-codex``: the Responses API; ``dall-e-3``: images; ``whisper-1``: audio), and
litellm routes those elsewhere. To decide the route the same way without paying litellm's import,
the model's entry is looked up in the model map litellm ships (a JSON file) - only that entry is
decoded, so a look-up costs a text search of the file, not a parse of all of it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading

__all__ = ["CHAT_MODES", "map_text", "openai_model_mode"]

# modes litellm sends as chat-completions requests
CHAT_MODES = frozenset({"chat"})
_MAP_FILE = "model_prices_and_context_window_backup.json"
_lock = threading.Lock()
_text: str | None = None


def map_text() -> str:
    """The text of litellm's bundled model map ("" when litellm is not installed)."""
    global _text
    if _text is None:
        with _lock:
            if _text is None:
                spec = importlib.util.find_spec("litellm")
                text = ""
                if spec is not None and spec.origin:
                    path = os.path.join(os.path.dirname(spec.origin), _MAP_FILE)
                    try:
                        with open(path, encoding="utf-8") as fh:
                            text = fh.read()
                    except OSError:
                        text = ""
                _text = text
    return _text


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
