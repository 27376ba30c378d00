"""Few-shot optimisation: let sigform choose a program's demos.

::

    from sigform.optimize import BootstrapFewShot, KNNFewShot, LabeledFewShot, RandomSearch

    optimiser = BootstrapFewShot(k=4)
    better = optimiser.compile(program, trainset=train, valset=val)
    optimiser.report                     # what was tried, scores with intervals, calls, tokens
    sf.evaluate(better, devset)          # on examples no demo came from
    better.save("program.json")          # keeps the demos (and KNN settings)

Every optimiser returns an optimised copy; the original program is unchanged. Names load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "BootstrapFewShot": "sigform.optimize.bootstrap",
    "KNNDemos": "sigform.optimize.knn",
    "KNNFewShot": "sigform.optimize.knn",
    "LabeledFewShot": "sigform.optimize.labeled",
    "LiteLLMEmbedder": "sigform.optimize.similarity",
    "OptimizationReport": "sigform.optimize.report",
    "Optimizer": "sigform.optimize.base",
    "RandomSearch": "sigform.optimize.random_search",
    "Trial": "sigform.optimize.report",
    "tracing": "sigform.optimize.trace",
}

__all__ = [
    "BootstrapFewShot",
    "KNNDemos",
    "KNNFewShot",
    "LabeledFewShot",
    "LiteLLMEmbedder",
    "OptimizationReport",
    "Optimizer",
    "RandomSearch",
    "Trial",
    "tracing",
]

__getattr__, __dir__ = lazy_exports("sigform.optimize", _EXPORTS, globals())

if TYPE_CHECKING:
    from sigform.optimize.base import Optimizer
    from sigform.optimize.bootstrap import BootstrapFewShot
    from sigform.optimize.knn import KNNDemos, KNNFewShot
    from sigform.optimize.labeled import LabeledFewShot
    from sigform.optimize.random_search import RandomSearch
    from sigform.optimize.report import OptimizationReport, Trial
    from sigform.optimize.similarity import LiteLLMEmbedder
    from sigform.optimize.trace import tracing
