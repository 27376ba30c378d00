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

from sigform.errors import MalformedResponseError

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

    Credentials come from the environment, as for litellm, unless ``api_key`` is given (a
    literal, ``env:NAME``, ``cmd:...`` or a callable, as for :class:`~sigform.LM`); ``api_base``
    may point at a local server. Nothing secret is stored: ``dump_state`` is the model name and
    ``api_base`` without URL credentials; the key is never saved or shown.
    """

    def __init__(self, model: str, *, api_base: str | None = None, api_key: object = None) -> None:
        from sigform.lm.credentials import Credential

        if not isinstance(model, str) or not model:
            raise ValueError(f"an embedding model name is a non-empty string, got {model!r}")
        self.model = model
        self.api_base = api_base
        self._api_key = Credential("api_key", api_key, secret=True) if api_key is not None else None

    def __call__(self, texts: list[str]) -> list[list[float]]:
        from sigform.lm.errors_map import map_exception
        from sigform.provider.litellm_import import import_litellm

        litellm = import_litellm()  # with the price map read locally: no download at import
        kwargs: dict[str, object] = {"api_base": self.api_base} if self.api_base else {}
        key = self._api_key.get() if self._api_key is not None else None
        if key is not None:
            kwargs["api_key"] = key
        try:
            response = litellm.embedding(model=self.model, input=texts, **kwargs)
        except Exception as exc:  # a provider error, with any echoed key shown as ***
            raise map_exception(
                exc, model=self.model, secrets=[key] if isinstance(key, str) else []
            ) from None
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise MalformedResponseError(
                f"the embeddings reply of {self.model!r} has no list of embeddings "
                f"(data is {type(data).__name__})"
            )
        return [_embedding_of(item, i, self.model) for i, item in enumerate(data)]

    def dump_state(self) -> dict[str, object]:
        from sigform.lm.credentials import strip_url_credentials

        return {
            "model": self.model,
            "api_base": strip_url_credentials(self.api_base) if self.api_base else None,
        }

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder({self.model!r})"


def _embedding_of(item: object, i: int, model: str) -> Any:
    vector = item.get("embedding") if isinstance(item, dict) else getattr(item, "embedding", None)
    if vector is None:
        raise MalformedResponseError(f"the embeddings reply of {model!r}: item {i} has no 'embedding'")
    return vector


def _vectors(raw: object, count: int, source: str) -> list[list[float]]:
    """``raw`` checked as ``count`` vectors of one length of finite numbers (an embedder's answer
    comes from a server or a user function: a malformed one is a clear error, not a TypeError)."""
    what = f"the embeddings from {source}"
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise MalformedResponseError(f"{what} are not a list of vectors (got {type(raw).__name__})")
    if len(raw) != count:
        raise MalformedResponseError(f"{what}: {len(raw)} vectors for {count} texts")
    out: list[list[float]] = []
    for i, vector in enumerate(raw):
        if isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence) or not vector:
            raise MalformedResponseError(f"{what}: vector {i} is not a non-empty list of numbers")
        try:
            numbers = [float(x) for x in vector if isinstance(x, (int, float)) and not isinstance(x, bool)]
        except OverflowError:  # an int past float's range
            numbers = []
        if len(numbers) != len(vector) or not all(map(math.isfinite, numbers)):
            raise MalformedResponseError(f"{what}: vector {i} holds something other than finite numbers")
        if out and len(numbers) != len(out[0]):
            raise MalformedResponseError(
                f"{what}: vector {i} has {len(numbers)} numbers, vector 0 {len(out[0])}"
            )
        out.append(numbers)
    return out


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0 for _ in vector]


class EmbeddingIndex:
    """Cosine similarity of a query's embedding against the texts' embeddings."""

    def __init__(self, texts: Sequence[str], embedder: Embedder) -> None:
        self._embed = embedder
        self._source = repr(embedder) if isinstance(embedder, LiteLLMEmbedder) else "the embedder function"
        vectors = _vectors(embedder(list(texts)), len(texts), self._source) if texts else []
        self._vectors = [_unit(v) for v in vectors]

    def scores(self, query: str) -> list[float]:
        [vector] = _vectors(self._embed([query]), 1, self._source)
        if self._vectors and len(vector) != len(self._vectors[0]):
            raise MalformedResponseError(
                f"the embeddings from {self._source}: the query's vector has {len(vector)} numbers, "
                f"the indexed texts' {len(self._vectors[0])}"
            )
        unit = _unit(vector)
        return [sum(a * b for a, b in zip(unit, v, strict=False)) for v in self._vectors]
