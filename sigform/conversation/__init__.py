"""Long conversations and repeated prefixes: pruning, and sending requests that fit.

* :class:`Pruning` -- how requests with long histories (a ``History`` input, an agent's
  trajectory) are cut to fit the model's context window: oldest turns first, a tool call
  always with its results, never the system message or the demos, with a marker and a
  :class:`PruneReport` in the LM's history entry;
* :func:`send` -- one request pruned to fit, cache-marked and normalised for its provider,
  then sent through the LM.

This layer sits above the LM (it calls it); the provider message rules it applies live below
the LM in :mod:`sigform.provider` (:func:`normalise`, :func:`mark_prefix`, :func:`token_counter`,
:func:`model_limits`, re-exported here).
"""

from sigform.conversation.layout import Layout, tool_units
from sigform.conversation.pruning import DEFAULT_MARKER, Pruned, Pruning, prune
from sigform.conversation.report import PruneReport, active_report, reporting
from sigform.conversation.sending import Fitted, RequestFitter, asend, send
from sigform.provider import (
    CACHE_CONTROL,
    ModelLimits,
    ProviderRules,
    TokenCounter,
    mark_prefix,
    marks_cache,
    model_limits,
    normalise,
    output_reserve,
    rules_for,
    token_counter,
)

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
