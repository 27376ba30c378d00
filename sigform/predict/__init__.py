"""Programs: Predict, ChainOfThought, Module, BestOfN/Refine, majority, batch, save/load.

Declare a signature, get a callable program, run it on one input or ten thousand::

    qa = sf.Predict("question -> answer")
    qa(question="Capital of France?").answer
    qa.batch([{"question": q} for q in questions], num_threads=16)
"""

from sigform.predict.batch import BatchError, Failure
from sigform.predict.best_of_n import BestOfN, Refine
from sigform.predict.chain_of_thought import ChainOfThought
from sigform.predict.example import Example
from sigform.predict.executors import Executor, ThreadExecutor
from sigform.predict.module import Module
from sigform.predict.persistence import ProgramStateError
from sigform.predict.predict import Predict
from sigform.predict.prediction import Completions, Prediction, PredictionMeta
from sigform.predict.runstate import UsageTracker, track_usage
from sigform.predict.voting import majority

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
