"""The LM layer: ``sigform.LM`` over litellm (and over its own HTTP transport for
OpenAI-compatible endpoints), cache, retries, credentials, parameter schema, history, streaming.

Its options are declared once (:class:`LMOptions`); every call goes through one lifecycle
(``LM.prepare`` -> :class:`Call`: before / done / failed); what carries requests is a
:class:`Backend` (the fast path's, litellm's, or one given with ``LM(model, backend=...)``).

Importing this package imports no HTTP library and not litellm; they load on the first call.
"""

from __future__ import annotations

from sigform.errors import CredentialError, ParameterError
from sigform.lm.backend import Backend
from sigform.lm.cache import ResponseCache, cache_directory, clear_caches, get_cache
from sigform.lm.credentials import Credential
from sigform.lm.history import HistoryEntry, global_history, inspect_history
from sigform.lm.interface import Completion, LMProtocol, ToolCall, Usage
from sigform.lm.lifecycle import Call
from sigform.lm.model import LM
from sigform.lm.options import LMOptions
from sigform.lm.params import ParameterWarning, ParamSpec
from sigform.lm.retry import RetryPolicy
from sigform.lm.streaming import StreamDelta

__all__ = [
    "LM",
    "Backend",
    "Call",
    "Completion",
    "Credential",
    "CredentialError",
    "HistoryEntry",
    "LMOptions",
    "LMProtocol",
    "ParamSpec",
    "ParameterError",
    "ParameterWarning",
    "ResponseCache",
    "RetryPolicy",
    "StreamDelta",
    "ToolCall",
    "Usage",
    "cache_directory",
    "clear_caches",
    "get_cache",
    "global_history",
    "inspect_history",
]
