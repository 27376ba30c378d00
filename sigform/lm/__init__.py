"""The LM layer: ``sigform.LM`` over litellm (plus an openai-SDK fast path), cache, retries,
credentials, parameter schema, history and streaming.

Importing this package does not import litellm or the openai SDK; they load on the first call.
"""

from __future__ import annotations

from sigform.lm.cache import ResponseCache, cache_directory, clear_caches, get_cache
from sigform.lm.credentials import Credential, CredentialError
from sigform.lm.history import HistoryEntry, global_history, inspect_history
from sigform.lm.interface import Completion, LMProtocol, ToolCall, Usage
from sigform.lm.model import LM, ParameterWarning
from sigform.lm.options import LMOptions
from sigform.lm.params import ParameterError, ParamSpec
from sigform.lm.retry import RetryPolicy
from sigform.lm.streaming import StreamDelta

__all__ = [
    "LM",
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
