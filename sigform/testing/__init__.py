"""Test helpers for sigform users and sigform's own tests: scripted LMs and loopback fake
provider servers that answer in each provider's real wire format.

:class:`ScriptedLM` answers from a script (by call order, or by input with
:meth:`ScriptedLM.by_input`) and records every request it receives.
"""

from sigform.testing.scripted import DEFAULT_FEATURES, ScriptedCall, ScriptedLM, ScriptError, last_user_text

__all__ = ["DEFAULT_FEATURES", "ScriptError", "ScriptedCall", "ScriptedLM", "last_user_text"]
