"""Nearest-neighbour demos: for each call, the ``k`` training examples most like its inputs.

``KNNFewShot(k).compile(program, trainset=...)`` gives each predictor whose fields the trainset
carries a :class:`KNNDemos` selector (``predictor.demo_selector``) in place of its fixed demos
(``keep_demos=True`` keeps them, before the chosen ones). On every call the selector ranks its
pool by similarity to the call's input values -- BM25 by default, or embeddings -- and the ``k``
nearest become demos, the nearest last (closest to the question). Ties keep trainset order, so
the same input always gets the same demos.

The selector is saved with the program (pool, ``k``, fields, index kind, embedding model name)
and the index is rebuilt on first use after loading. A custom embedder function cannot be saved:
use a litellm model name for a program you will save. Loading a program whose selector uses
embeddings needs ``restore_lm=True``: a file never chooses where the inputs are sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sigform.errors import ProgramStateError
from sigform.evaluation.metrics import Metric
from sigform.lm.credentials import Credential
from sigform.optimize.base import Optimizer, as_demo, fits
from sigform.optimize.labeled import check_count
from sigform.optimize.report import OptimizationReport, Trial
from sigform.optimize.similarity import BM25Index, EmbeddingIndex, LiteLLMEmbedder
from sigform.predict.example import Example
from sigform.predict.module import Module

__all__ = ["KNNDemos", "KNNFewShot"]

EmbedderSpec = str | LiteLLMEmbedder | Callable[[list[str]], Sequence[Sequence[float]]] | None


def _text(values: Mapping[str, object], fields: Sequence[str]) -> str:
    parts = []
    for name in fields:
        value = values.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            from pydantic_core import to_jsonable_python

            value = json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)
        parts.append(value)
    return "\n".join(parts)


def _as_embedder(embedder: EmbedderSpec) -> Any:
    if embedder is None or isinstance(embedder, LiteLLMEmbedder):
        return embedder
    if isinstance(embedder, str):
        return LiteLLMEmbedder(embedder)
    if callable(embedder):
        return embedder
    raise TypeError(
        f"embedder must be a litellm model name, a LiteLLMEmbedder or a function, got {embedder!r}"
    )


class KNNDemos:
    """Chooses a call's demos: the ``k`` pool examples nearest to its inputs (see the module docstring).

    Args:
        pool: candidate demos (Examples with inputs marked).
        k: demos per call.
        fields: the input fields compared (default: every marked input of the pool's examples).
        embedder: ``None`` for BM25; a litellm model name, a :class:`LiteLLMEmbedder` or a
            function ``texts -> vectors`` for embeddings.
    """

    def __init__(
        self,
        pool: Sequence[Example],
        k: int,
        *,
        fields: Sequence[str] | None = None,
        embedder: EmbedderSpec = None,
    ) -> None:
        self.pool = list(pool)
        self.k = check_count(k)
        if fields is None:
            names: list[str] = []
            for example in self.pool:
                for name in example._input_keys or ():
                    if name not in names:
                        names.append(name)
            fields = names
        self.fields = tuple(fields)
        self.embedder = _as_embedder(embedder)
        self._index: object = None
        self._lock = threading.Lock()

    @property
    def index_kind(self) -> str:
        return "bm25" if self.embedder is None else "embedding"

    def _built(self) -> Any:
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    texts = [_text(ex.to_dict(), self.fields) for ex in self.pool]
                    self._index = (
                        BM25Index(texts) if self.embedder is None else EmbeddingIndex(texts, self.embedder)
                    )
                index = self._index
        return index

    def select(self, inputs: Mapping[str, object]) -> list[Example]:
        """The ``k`` nearest pool examples to ``inputs``, nearest last."""
        if not self.pool or not self.k:
            return []
        scores = self._built().scores(_text(inputs, self.fields))
        ranked = sorted(range(len(self.pool)), key=lambda i: (-scores[i], i))[: self.k]
        return [self.pool[i] for i in reversed(ranked)]

    # -- copies and state ------------------------------------------------------------------------
    def __deepcopy__(self, memo: dict[int, Any]) -> KNNDemos:
        return KNNDemos([ex.copy() for ex in self.pool], self.k, fields=self.fields, embedder=self.embedder)

    def dump_state(self) -> dict[str, object]:
        """JSON-ready settings (the pool is written by the caller, like demos)."""
        embedder = self.embedder
        if embedder is not None and not isinstance(embedder, LiteLLMEmbedder):
            raise ProgramStateError(
                "a KNN demo selector with a custom embedder function cannot be saved; "
                "use a litellm embedding model name (embedder='provider/model') for a saved program"
            )
        return {
            "kind": "knn",
            "k": self.k,
            "fields": list(self.fields),
            "index": self.index_kind,
            "embedder": embedder.dump_state() if embedder is not None else None,
        }

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, object],
        pool: list[Example],
        where: str,
        *,
        allow_model: bool = False,
        api_key: object = None,
    ) -> KNNDemos:
        """Rebuild from :meth:`dump_state` (untrusted input: every value is checked).

        A saved file never chooses which model is called or where inputs are sent: an embedding
        index is rebuilt only with ``allow_model`` (``load(..., restore_lm=True)``). Its key is
        ``api_key`` (the loader's); without one, an endpoint the file names gets a placeholder
        key, never one from the environment (``OPENAI_API_KEY`` ...)."""
        if not isinstance(state, Mapping) or state.get("kind") != "knn":
            raise ProgramStateError(f"{where}: not a saved KNN demo selector")
        k, fields, index = state.get("k"), state.get("fields"), state.get("index")
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ProgramStateError(f"{where}: k must be a non-negative integer, got {k!r}")
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise ProgramStateError(f"{where}: fields must be a list of names, got {fields!r}")
        embedder: Any = None
        if index == "embedding":
            saved = state.get("embedder")
            if not isinstance(saved, Mapping) or not isinstance(saved.get("model"), str):
                raise ProgramStateError(f"{where}: an embedding index needs its model name")
            api_base = saved.get("api_base")
            if api_base is not None and not isinstance(api_base, str):
                raise ProgramStateError(f"{where}: api_base must be a string")
            if not allow_model:
                raise ProgramStateError(
                    f"{where}: these nearest-neighbour demos use embeddings from {saved['model']!r}; a saved "
                    "program never chooses which model its inputs are sent to: load it with restore_lm=True "
                    "to use that model"
                )
            if api_key is None and api_base is not None:
                from sigform.lm.saved_state import IGNORED_KEY

                api_key = Credential.literal("api_key", IGNORED_KEY, secret=True)
            embedder = LiteLLMEmbedder(saved["model"], api_base=api_base, api_key=api_key)
        elif index != "bm25":
            raise ProgramStateError(f"{where}: unknown index kind {index!r} (expected 'bm25' or 'embedding')")
        return cls(pool, k, fields=fields, embedder=embedder)

    def __repr__(self) -> str:
        fields = list(self.fields)
        return f"KNNDemos(k={self.k}, pool={len(self.pool)}, index={self.index_kind!r}, fields={fields})"


class KNNFewShot(Optimizer):
    """Give each predictor nearest-neighbour demos from the trainset (see the module docstring).

    Args:
        k: demos per call.
        embedder: ``None`` (BM25, no model needed), a litellm embedding model name, or a function.
        fields: the input fields compared (default: the predictor's inputs).
        keep_demos: keep the predictors' fixed demos (shown before the chosen ones).
        metric: used only to score the result on ``valset`` when one is given.
    """

    def __init__(
        self,
        k: int = 4,
        *,
        embedder: EmbedderSpec = None,
        fields: Sequence[str] | None = None,
        keep_demos: bool = False,
        metric: Metric | None = None,
    ) -> None:
        super().__init__()
        self.keep_demos = keep_demos
        self.k = check_count(k)
        self.embedder = _as_embedder(embedder)
        self.fields = tuple(fields) if fields is not None else None
        self.metric = metric

    def _describe(self) -> str:
        index = "bm25" if self.embedder is None else f"embeddings {self.embedder!r}"
        return f"KNNFewShot(k={self.k}, index={index})"

    def _optimize(
        self, student: Module, train: list[Example], val: list[Example], report: OptimizationReport
    ) -> None:
        for name, predictor in student.named_predictors():
            pool = [as_demo(ex, predictor) for ex in train if fits(ex, predictor)]
            if not pool:
                report.notes.append(f"{name}: no training example has its inputs and an output; no KNN demos")
                continue
            fields = self.fields or tuple(predictor.signature.input_fields)
            predictor.demo_selector = KNNDemos(pool, self.k, fields=fields, embedder=self.embedder)
            if not self.keep_demos:
                predictor.demos = []
        detail = f"{self.k} nearest of {len(train)} per call"
        trial = Trial("nearest-neighbour demos", detail, chosen=True)
        if val:
            trial = self.score_on(student, val, self.metric, trial.name, detail)
            trial.chosen = True
        report.trials.append(trial)
