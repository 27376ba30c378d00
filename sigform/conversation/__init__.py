"""Long conversations and repeated prefixes: pruning, message normalisation, prompt caching.

* :class:`Pruning` -- how requests with long histories (a ``History`` input, an agent's
  trajectory) are cut to fit the model's context window: oldest turns first, a tool call
  always with its results, never the system message or the demos, with a marker and a
  :class:`PruneReport` in the LM's history entry;
* :func:`normalise` -- the provider-specific message fixes litellm does not make itself;
* :func:`mark_prefix` -- prompt-cache markers on the stable prefix (``prompt_cache=True``);
* :func:`token_counter`, :func:`model_limits` -- token counts and context windows.

Nothing here imports litellm until a model's tokenizer or limits are needed.
"""

from sigform.conversation.layout import Layout, tool_units
from sigform.conversation.normalise import ProviderRules, normalise, rules_for
from sigform.conversation.prompt_cache import CACHE_CONTROL, mark_prefix, marks_cache
from sigform.conversation.pruning import DEFAULT_MARKER, Pruned, Pruning, prune
from sigform.conversation.report import PruneReport, active_report, reporting
from sigform.conversation.sending import Fitted, RequestFitter, asend, send
from sigform.conversation.tokens import ModelLimits, TokenCounter, model_limits, output_reserve, token_counter

__all__ = [
    "CACHE_CONTROL",
    "DEFAULT_MARKER",
    "Fitted",
    "Layout",
    "ModelLimits",
    "ProviderRules",
    "PruneReport",
    "Pruned",
    "Pruning",
    "RequestFitter",
    "TokenCounter",
    "active_report",
    "asend",
    "mark_prefix",
    "marks_cache",
    "model_limits",
    "normalise",
    "output_reserve",
    "prune",
    "reporting",
    "rules_for",
    "send",
    "token_counter",
    "tool_units",
]
