"""sigform: typed signatures in, validated Python values out.

Declare what goes in and what comes out; sigform writes the prompt, calls the model and turns
its text back into validated Python values::

    import sigform as sf

    class Answer(sf.Signature):
        \"\"\"Answer with a short factoid.\"\"\"
        question: str = sf.InputField()
        answer: str = sf.OutputField(desc="1-5 words")

    qa = sf.Predict(Answer)
    print(qa(question="Capital of France?").answer)

Public names are imported lazily (PEP 562) so that ``import sigform`` stays fast and never
imports litellm; the first attribute access loads the module that defines the name.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sigform._lazy import lazy_exports
from sigform.predict.demo_selectors import register_selector_kind

__version__ = "0.1.0"

# a library never prints through logging's last-resort handler: sigform's log records (every
# "sigform.*" logger propagates here) stay silent unless the application configures logging
logging.getLogger("sigform").addHandler(logging.NullHandler())

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # signatures
    "Signature": "sigform.signatures",
    "InputField": "sigform.signatures",
    "OutputField": "sigform.signatures",
    "make_signature": "sigform.signatures",
    # typed values and special types
    "render_value": "sigform.types",
    "type_hint": "sigform.types",
    "coerce": "sigform.types",
    "Image": "sigform.types",
    "Audio": "sigform.types",
    "File": "sigform.types",
    "History": "sigform.types",
    "Reasoning": "sigform.types",
    "ToolCalls": "sigform.types",
    "Media": "sigform.types",
    "iter_media": "sigform.types",
    "coerce_fields": "sigform.types",
    "describe_type": "sigform.types",
    "TypeDescription": "sigform.types",
    "json_schema": "sigform.types",
    "strict_json_schema": "sigform.types",
    "type_name": "sigform.types",
    "resolve_type_name": "sigform.types",
    # adapters
    "Adapter": "sigform.adapters",
    "AutoAdapter": "sigform.adapters",
    "ChatAdapter": "sigform.adapters",
    "JSONAdapter": "sigform.adapters",
    "XMLAdapter": "sigform.adapters",
    "TwoStepAdapter": "sigform.adapters",
    "AdapterResult": "sigform.adapters",
    "FieldDelta": "sigform.adapters",
    # language models
    "LM": "sigform.lm",
    "Completion": "sigform.lm.interface",
    "Usage": "sigform.lm.interface",
    "ToolCall": "sigform.lm.interface",
    "inspect_history": "sigform.lm",
    "Callback": "sigform.hooks",
    "RequestVetoed": "sigform.errors",
    "StreamDelta": "sigform.lm",
    "ParamSpec": "sigform.lm",
    "ParameterError": "sigform.errors",
    "ParameterWarning": "sigform.lm",
    "BatchFailureWarning": "sigform.predict.batch",
    "CheckpointWarning": "sigform.predict.checkpoint",
    "SavedStateWarning": "sigform.lm.saved_state",
    "CacheWarning": "sigform.lm.cache",
    "UnknownModelWarning": "sigform.lm.model_names",
    "MetricErrorWarning": "sigform.evaluation.runner",
    "LabelLeakWarning": "sigform.evaluation.leaks",
    "CredentialError": "sigform.errors",
    "LocalModelError": "sigform.errors",
    "Pruning": "sigform.conversation",
    "PruneReport": "sigform.conversation",
    "JSONTextError": "sigform.errors",
    "parse_json_text": "sigform.types",
    # settings
    "configure": "sigform.settings",
    "context": "sigform.settings",
    # programs
    "Predict": "sigform.predict",
    "ChainOfThought": "sigform.predict",
    "Module": "sigform.predict",
    "Prediction": "sigform.predict",
    "Example": "sigform.predict",
    "BestOfN": "sigform.predict",
    "Refine": "sigform.predict",
    "majority": "sigform.predict",
    "track_usage": "sigform.predict",
    "Failure": "sigform.predict",
    # evaluation and few-shot optimisation
    "evaluate": "sigform.evaluation",
    "aevaluate": "sigform.evaluation",
    "Evaluate": "sigform.evaluation",
    "EvaluationResult": "sigform.evaluation",
    "TypedMatch": "sigform.evaluation",
    "Score": "sigform.evaluation",
    "LabeledFewShot": "sigform.optimize",
    "BootstrapFewShot": "sigform.optimize",
    "RandomSearch": "sigform.optimize",
    "KNNFewShot": "sigform.optimize",
    # tools
    "Tool": "sigform.tools",
    "CommandTool": "sigform.tools",
    "MCPClient": "sigform.tools",
    "MCPTool": "sigform.tools",
    "ToolResult": "sigform.tools",
    "Agent": "sigform.tools",
    # errors
    "SigformError": "sigform.errors",
    "SignatureError": "sigform.errors",
    "InputError": "sigform.errors",
    "ParseError": "sigform.errors",
    "StructureError": "sigform.errors",
    "FieldValueError": "sigform.errors",
    "FieldError": "sigform.errors",
    "LMError": "sigform.errors",
    "AuthenticationError": "sigform.errors",
    "RateLimitError": "sigform.errors",
    "ContextWindowError": "sigform.errors",
    "BadRequestError": "sigform.errors",
    "LMTimeoutError": "sigform.errors",
    "ProviderError": "sigform.errors",
    "ToolError": "sigform.errors",
    "MCPServerError": "sigform.errors",
    "ToolArgumentsError": "sigform.errors",
    "BatchError": "sigform.errors",
    "ProgramStateError": "sigform.errors",
}

# literal, so that type checkers see the public names (mypy --strict, pyright); a test keeps it
# equal to the names of _EXPORTS
__all__ = [
    "LM",
    "Adapter",
    "AdapterResult",
    "Agent",
    "Audio",
    "AuthenticationError",
    "AutoAdapter",
    "BadRequestError",
    "BatchError",
    "BatchFailureWarning",
    "BestOfN",
    "BootstrapFewShot",
    "CacheWarning",
    "Callback",
    "ChainOfThought",
    "ChatAdapter",
    "CheckpointWarning",
    "CommandTool",
    "Completion",
    "ContextWindowError",
    "CredentialError",
    "Evaluate",
    "EvaluationResult",
    "Example",
    "Failure",
    "FieldDelta",
    "FieldError",
    "FieldValueError",
    "File",
    "History",
    "Image",
    "InputError",
    "InputField",
    "JSONAdapter",
    "JSONTextError",
    "KNNFewShot",
    "LMError",
    "LMTimeoutError",
    "LabelLeakWarning",
    "LabeledFewShot",
    "LocalModelError",
    "MCPClient",
    "MCPServerError",
    "MCPTool",
    "Media",
    "MetricErrorWarning",
    "Module",
    "OutputField",
    "ParamSpec",
    "ParameterError",
    "ParameterWarning",
    "ParseError",
    "Predict",
    "Prediction",
    "ProgramStateError",
    "ProviderError",
    "PruneReport",
    "Pruning",
    "RandomSearch",
    "RateLimitError",
    "Reasoning",
    "Refine",
    "RequestVetoed",
    "SavedStateWarning",
    "Score",
    "SigformError",
    "Signature",
    "SignatureError",
    "StreamDelta",
    "StructureError",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCalls",
    "ToolError",
    "ToolResult",
    "TwoStepAdapter",
    "TypeDescription",
    "TypedMatch",
    "UnknownModelWarning",
    "Usage",
    "XMLAdapter",
    "__version__",
    "aevaluate",
    "coerce",
    "coerce_fields",
    "configure",
    "context",
    "describe_type",
    "evaluate",
    "inspect_history",
    "iter_media",
    "json_schema",
    "majority",
    "make_signature",
    "parse_json_text",
    "render_value",
    "resolve_type_name",
    "strict_json_schema",
    "track_usage",
    "type_hint",
    "type_name",
]


# subpackages reachable as attributes without an explicit import (``sf.local.serve()``)
_SUBMODULES = frozenset(
    {
        "adapters",
        "conversation",
        "errors",
        "evaluation",
        "hooks",
        "lm",
        "local",
        "optimize",
        "predict",
        "settings",
        "signatures",
        "testing",
        "tools",
        "types",
    }
)


__getattr__, __dir__ = lazy_exports("sigform", _EXPORTS, globals(), submodules=_SUBMODULES)


def _load_knn_demos(state: Any, pool: list[Any], where: str, allow_model: bool, api_key: object) -> object:
    from sigform.optimize.knn import KNNDemos  # deferred: only a saved KNN selector loads optimize

    return KNNDemos.from_state(state, pool, where, allow_model=allow_model, api_key=api_key)


# sigform's own demo selector kinds, registered here (the package every submodule import runs
# first, and the layer above both predict and optimize) so that a fresh process can load a saved
# program's selector without predict importing optimize
register_selector_kind("knn", _load_knn_demos)


if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from sigform.adapters import (
        Adapter,
        AdapterResult,
        AutoAdapter,
        ChatAdapter,
        FieldDelta,
        JSONAdapter,
        TwoStepAdapter,
        XMLAdapter,
    )
    from sigform.conversation import PruneReport, Pruning
    from sigform.errors import (
        AuthenticationError,
        BadRequestError,
        BatchError,
        ContextWindowError,
        CredentialError,
        FieldError,
        FieldValueError,
        InputError,
        JSONTextError,
        LMError,
        LMTimeoutError,
        LocalModelError,
        MCPServerError,
        ParameterError,
        ParseError,
        ProgramStateError,
        ProviderError,
        RateLimitError,
        RequestVetoed,
        SigformError,
        SignatureError,
        StructureError,
        ToolArgumentsError,
        ToolError,
    )
    from sigform.evaluation import Evaluate, EvaluationResult, Score, TypedMatch, aevaluate, evaluate
    from sigform.evaluation.leaks import LabelLeakWarning
    from sigform.evaluation.runner import MetricErrorWarning
    from sigform.hooks import Callback
    from sigform.lm import (
        LM,
        ParameterWarning,
        ParamSpec,
        StreamDelta,
        inspect_history,
    )
    from sigform.lm.cache import CacheWarning
    from sigform.lm.interface import Completion, ToolCall, Usage
    from sigform.lm.model_names import UnknownModelWarning
    from sigform.lm.saved_state import SavedStateWarning
    from sigform.optimize import BootstrapFewShot, KNNFewShot, LabeledFewShot, RandomSearch
    from sigform.predict import (
        BestOfN,
        ChainOfThought,
        Example,
        Failure,
        Module,
        Predict,
        Prediction,
        Refine,
        majority,
        track_usage,
    )
    from sigform.predict.batch import BatchFailureWarning
    from sigform.predict.checkpoint import CheckpointWarning
    from sigform.settings import configure, context
    from sigform.signatures import InputField, OutputField, Signature, make_signature
    from sigform.tools import Agent, CommandTool, MCPClient, MCPTool, Tool, ToolResult
    from sigform.types import (
        Audio,
        File,
        History,
        Image,
        Media,
        Reasoning,
        ToolCalls,
        TypeDescription,
        coerce,
        coerce_fields,
        describe_type,
        iter_media,
        json_schema,
        parse_json_text,
        render_value,
        resolve_type_name,
        strict_json_schema,
        type_hint,
        type_name,
    )
