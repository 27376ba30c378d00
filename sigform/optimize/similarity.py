"""Similarity indexes over example texts for nearest-neighbour demos.

* :class:`BM25Index` -- lexical, with the ``bm25s`` library (``pip install 'sigform[optimize]'``):
  no model, no network, milliseconds for thousands of examples.
* :class:`EmbeddingIndex` -- cosine similarity of embeddings from any embedder: a litellm model
  name (:class:`LiteLLMEmbedder`, which uses the provider's usual credentials from the
  environment) or a function ``texts -> vectors``.

Both return one score per indexed text; callers break ties by position, so results are stable.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["BM25Index", "EmbeddingIndex", "LiteLLMEmbedder", "tokens"]

_WORD = re.compile(r"\w+", re.UNICODE)

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscores; any script)."""
    return _WORD.findall(text.lower())


class BM25Index:
    """BM25 scores of a query against fixed texts."""

    def __init__(self, texts: Sequence[str]) -> None:
        try:
            with warnings.catch_warnings():  # bm25s imports tqdm.auto, which warns in notebooks
                warnings.filterwarnings("ignore", message="IProgress not found")
                import bm25s
        except ImportError as exc:
            raise ImportError(
                "nearest-neighbour demos with the BM25 index need the bm25s package: "
                "pip install 'sigform[optimize]' (or pass embedder= to use embeddings)"
            ) from exc
        corpus = [tokens(t) or ["\x00empty"] for t in texts]
        self._size = len(corpus)
        self._index = bm25s.BM25()
        self._index.index(corpus, show_progress=False)

    def scores(self, query: str) -> list[float]:
        words = tokens(query)
        if not words:
            return [0.0] * self._size
        return [float(s) for s in self._index.get_scores(words)]


class LiteLLMEmbedder:
    """Embeddings from a litellm model (``"openai/text-embedding-3-small"``, ...).

    Credentials come from the environment, as for litellm; ``api_base`` may point at a local
    server. Nothing secret is stored: ``dump_state`` is the model name and ``api_base``.
    """

    def __init__(self, model: str, *, api_base: str | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"an embedding model name is a non-empty string, got {model!r}")
        self.model = model
        self.api_base = api_base

    def __call__(self, texts: list[str]) -> list[list[float]]:
        from sigform.provider.litellm_import import import_litellm

        litellm = import_litellm()  # with the price map read locally: no download at import
        kwargs: dict[str, Any] = {"api_base": self.api_base} if self.api_base else {}
        response = litellm.embedding(model=self.model, input=texts, **kwargs)
        return [list(item["embedding"]) for item in response.data]

    def dump_state(self) -> dict[str, Any]:
        return {"model": self.model, "api_base": self.api_base}

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder({self.model!r})"


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0 for _ in vector]


class EmbeddingIndex:
    """Cosine similarity of a query's embedding against the texts' embeddings."""

    def __init__(self, texts: Sequence[str], embedder: Embedder) -> None:
        self._embed = embedder
        vectors = list(embedder(list(texts))) if texts else []
        if len(vectors) != len(texts):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        self._vectors = [_unit(v) for v in vectors]

    def scores(self, query: str) -> list[float]:
        [vector] = self._embed([query])
        unit = _unit(vector)
        return [sum(a * b for a, b in zip(unit, v, strict=False)) for v in self._vectors]
