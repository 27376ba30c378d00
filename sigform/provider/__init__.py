"""What each provider requires of a message list: rules that sit below the LM.

* :func:`normalise` -- the provider-specific message fixes litellm does not make itself;
* :func:`mark_prefix` -- prompt-cache markers on a request's stable prefix;
* :func:`token_counter`, :func:`model_limits` -- token counts and context windows.

They depend on nothing above them: the LM (``prompt_cache=`` on a plain call) and the
conversation layer (pruning, which fits requests before the LM sends them) both use them.
Nothing here imports litellm until a model's tokenizer or limits are needed.
"""

from sigform.provider.normalise import ProviderRules, normalise, rules_for
from sigform.provider.prompt_cache import CACHE_CONTROL, mark_prefix, marks_cache
from sigform.provider.tokens import ModelLimits, TokenCounter, model_limits, output_reserve, token_counter

__all__ = [
    "CACHE_CONTROL",
    "ModelLimits",
    "ProviderRules",
    "TokenCounter",
    "mark_prefix",
    "marks_cache",
    "model_limits",
    "normalise",
    "output_reserve",
    "rules_for",
    "token_counter",
]
