"""Loading litellm once, configured for sigform (its model map read locally, no retries of its own).

Below the LM layer: the provider rules (token counting, model limits) read litellm's model map
and tokenizers, and the LM's litellm backend sends requests through it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from sigform import runtime

_import_lock = threading.Lock()
_litellm: Any = None
_inherited: list[Any] = []  # a forked child's copies of its parent's litellm clients: never used


def import_litellm() -> Any:
    """Import and configure litellm once (local cost map, quiet, no retries of its own)."""
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                litellm.telemetry = False
                litellm.drop_params = False  # sigform drops (with a warning) what does not apply
                _litellm = litellm
    return _litellm


def _forget_clients_in_child() -> None:
    # litellm keeps its SDK clients (and their keep-alive connections) in one cache: children
    # forked after a call sent on the parent's socket and read each other's answers. A child
    # starts with an empty cache; the copies stay unused and unclosed (as in the fast path)
    litellm = _litellm
    cache = None if litellm is None else litellm.__dict__.get("in_memory_llm_clients_cache")
    if cache is not None:
        _inherited.append(cache)
        litellm.in_memory_llm_clients_cache = type(cache)()


runtime.on_fork(_forget_clients_in_child)
