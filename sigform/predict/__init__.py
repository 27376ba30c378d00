"""Programs: Predict, ChainOfThought, Module, BestOfN/Refine, majority, batch, save/load.

Declare a signature, get a callable program, run it on one input or ten thousand::

    qa = sf.Predict("question -> answer")
    qa(question="Capital of France?").answer
    qa.batch([{"question": q} for q in questions], num_threads=16)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform._lazy import lazy_exports

# name -> defining module, loaded on first access (PEP 562): a program that only predicts never
# imports batching, executors, progress bars, BestOfN/Refine or voting
_EXPORTS: dict[str, str] = {
    "BatchError": "sigform.errors",
    "BestOfN": "sigform.predict.best_of_n",
    "ChainOfThought": "sigform.predict.chain_of_thought",
    "Completions": "sigform.signatures.prediction",
    "Example": "sigform.predict.example",
    "Executor": "sigform.predict.executors",
    "Failure": "sigform.predict.batch",
    "Module": "sigform.predict.module",
    "Predict": "sigform.predict.predict",
    "Prediction": "sigform.signatures.prediction",
    "PredictionMeta": "sigform.signatures.prediction",
    "ProgramStateError": "sigform.errors",
    "Refine": "sigform.predict.best_of_n",
    "ThreadExecutor": "sigform.predict.executors",
    "UsageTracker": "sigform.predict.context_vars",
    "majority": "sigform.predict.voting",
    "track_usage": "sigform.predict.context_vars",
}

__all__ = [
    "BatchError",
    "BestOfN",
    "ChainOfThought",
    "Completions",
    "Example",
    "Executor",
    "Failure",
    "Module",
    "Predict",
    "Prediction",
    "PredictionMeta",
    "ProgramStateError",
    "Refine",
    "ThreadExecutor",
    "UsageTracker",
    "majority",
    "track_usage",
]


__getattr__, __dir__ = lazy_exports('sigform.predict', _EXPORTS, globals())


if TYPE_CHECKING:
    from sigform.errors import BatchError, ProgramStateError
    from sigform.predict.batch import Failure
    from sigform.predict.best_of_n import BestOfN, Refine
    from sigform.predict.chain_of_thought import ChainOfThought
    from sigform.predict.context_vars import UsageTracker, track_usage
    from sigform.predict.example import Example
    from sigform.predict.executors import Executor, ThreadExecutor
    from sigform.predict.module import Module
    from sigform.predict.predict import Predict
    from sigform.predict.voting import majority
    from sigform.signatures.prediction import Completions, Prediction, PredictionMeta
