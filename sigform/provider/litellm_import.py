"""Loading litellm once, configured for sigform (its model map read locally, no retries of its own).

Below the LM layer: the provider rules (token counting, model limits) read litellm's model map
and tokenizers, and the LM's litellm backend sends requests through it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["import_litellm"]

_import_lock = threading.Lock()
_litellm: Any = None


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
