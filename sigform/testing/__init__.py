"""Test helpers for sigform users and sigform's own tests: scripted LMs and loopback fake
provider servers that answer in each provider's real wire format.

:class:`ScriptedLM` answers from a script (by call order, or by input with
:meth:`ScriptedLM.by_input`) and records every request it receives. :class:`ScriptedBackend`
answers from the same kind of script *under* a real ``sigform.LM`` (``LM(model, backend=...)``),
so the LM's cache, hooks, history, retries and streaming run too.
"""

from sigform.testing.backend import ScriptedBackend
from sigform.testing.scripted import DEFAULT_FEATURES, ScriptedCall, ScriptedLM, ScriptError, last_user_text

__all__ = [
    "DEFAULT_FEATURES",
    "ScriptError",
    "ScriptedBackend",
    "ScriptedCall",
    "ScriptedLM",
    "last_user_text",
]
