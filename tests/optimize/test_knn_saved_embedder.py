"""A saved nearest-neighbour selector's embedder sends no ambient key (issue 27, finding 2).

A file names the embedding model and its ``api_base``; rebuilt by
``load(path, restore_lm=True, api_key=...)`` it sent ``Bearer $OPENAI_API_KEY`` to that endpoint.
The rule: an endpoint named by a file gets the key the loader gave, or a placeholder, never one
from the environment. A loopback fake server records the Authorization header it receives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.errors import MalformedResponseError
from sigform.optimize import KNNFewShot
from sigform.optimize.similarity import EmbeddingIndex, LiteLLMEmbedder
from sigform.predict import Example, Predict
from sigform.testing import ScriptedLM
from tests.lm_fake_openai import FakeOpenAIServer, Reply

AMBIENT = "sk-ambient-secret-do-not-send"
MINE = "sk-the-loaders-own-key"

TRAIN = [
    Example(text="a ripe apple", kind="fruit").with_inputs("text"),
    Example(text="the truck drove off", kind="vehicle").with_inputs("text"),
]


def _embeddings(body: dict[str, Any], headers: dict[str, str]) -> Reply:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = [
        {"object": "embedding", "index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(texts)
    ]
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    return Reply(body={"object": "list", "data": data, "model": "emb", "usage": usage})


def _saved(tmp_path: Path, api_base: str) -> Path:
    lm = ScriptedLM(lambda *a, **k: "[[ ## kind ## ]]\nfruit\n[[ ## completed ## ]]")
    # compiled with a function, then the saved selector is pointed at the endpoint: the file, as an
    # attacker would write it, names the model and the api_base
    knn = KNNFewShot(k=1, embedder=LiteLLMEmbedder("openai/text-embedding-3-small")).compile(
        Predict("text -> kind", lm=lm), trainset=TRAIN
    )
    path = knn.save(tmp_path / "knn.json")
    state = json.loads(path.read_text())
    state["predictors"]["self"]["demo_selector"]["embedder"]["api_base"] = api_base
    path.write_text(json.dumps(state))
    return path


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", AMBIENT)
    monkeypatch.setenv("MY_KEY", MINE)
    with FakeOpenAIServer() as fake:
        fake.reply = _embeddings
        yield fake


def test_a_file_named_embedding_endpoint_gets_only_the_loaders_key(tmp_path: Path, server: Any) -> None:
    path = _saved(tmp_path, server.api_base)
    loaded = Predict("text -> kind").load(path, restore_lm=True, api_key="env:MY_KEY")
    assert [d.text for d in loaded.demo_selector.select({"text": "apple"})]
    auth = {h.get("authorization") for h in server.headers}
    assert auth == {f"Bearer {MINE}"}
    assert AMBIENT not in json.dumps(server.headers)


def test_without_a_key_from_the_loader_a_file_named_endpoint_gets_none_of_the_environments(
    tmp_path: Path, server: Any
) -> None:
    path = _saved(tmp_path, server.api_base)
    loaded = Predict("text -> kind").load(path, restore_lm=True)
    loaded.demo_selector.select({"text": "apple"})
    assert server.headers and AMBIENT not in json.dumps(server.headers)
    assert MINE not in json.dumps(server.headers)


def test_the_key_is_never_saved_or_shown(tmp_path: Path, server: Any) -> None:
    path = _saved(tmp_path, "http://user:pw@127.0.0.1:9/v1")
    loaded = Predict("text -> kind").load(path, restore_lm=True, api_key=MINE)
    embedder = loaded.demo_selector.embedder
    assert MINE not in repr(embedder) and MINE not in repr(loaded.demo_selector)
    saved = json.dumps(loaded.dump_state())
    assert MINE not in saved and "pw" not in saved  # URL credentials are not written back either


@pytest.mark.parametrize(
    "body",
    [
        {"object": "list", "data": None},
        {"object": "list", "data": [{"index": 0}]},
        {"object": "list", "data": [{"index": 0, "embedding": "abc"}, {"index": 1, "embedding": "de"}]},
        {"object": "list", "data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},
        {"object": "list", "data": [{"index": 0, "embedding": [1.0]}]},
    ],
    ids=["no data", "no embedding", "text vectors", "ragged", "too few"],
)
def test_a_malformed_embeddings_reply_is_a_clear_sigform_error(
    tmp_path: Path, server: Any, body: dict[str, Any]
) -> None:
    server.reply = lambda b, h: Reply(
        body={**body, "model": "emb", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    )
    path = _saved(tmp_path, server.api_base)
    loaded = Predict("text -> kind").load(path, restore_lm=True, api_key=MINE)
    with pytest.raises((MalformedResponseError, sf.LMError)) as info:
        loaded.demo_selector.select({"text": "apple"})
    assert "embedding" in str(info.value) and MINE not in str(info.value)


@pytest.mark.parametrize(
    "vectors",
    [
        None,
        "ab",
        [[1.0, 2.0]],
        [[1.0, float("nan")], [1.0, 2.0]],
        [[True, 1.0], [1.0, 2.0]],
        [[10**400], [1]],
    ],
)
def test_an_embedder_function_with_a_malformed_answer_is_a_clear_error(vectors: Any) -> None:
    with pytest.raises(MalformedResponseError, match="embedder function"):
        EmbeddingIndex(["a", "b"], lambda texts: vectors)
