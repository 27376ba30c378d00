"""End to end through litellm: programs -> ChatAdapter -> sigform.LM -> litellm -> loopback fake OpenAI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.predict import BestOfN, ChainOfThought, Predict
from sigform.testing.providers import OpenAIChatFake, RecordedRequest, Reply, Usage


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


class Answer(sf.Signature):
    """Answer with a short factoid."""

    question: str = sf.InputField()
    answer: str = sf.OutputField(desc="1-5 words")
    confidence: float = sf.OutputField()


def lm_for(fake: OpenAIChatFake, **kwargs: Any) -> sf.LM:
    # fast_path=False: the request goes through litellm, not the openai SDK shortcut
    options: dict[str, Any] = {"api_key": "sk-test-secret", "fast_path": False, "cache": False, **kwargs}
    return sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, **options)


def user_text(request: RecordedRequest) -> str:
    return request.json["messages"][-1]["content"]


def test_predict_through_litellm() -> None:
    reply = Reply(chat(answer="Paris", confidence="0.95"), usage=Usage(prompt_tokens=40, completion_tokens=9))
    with OpenAIChatFake(reply) as fake:
        pred = Predict(Answer, lm=lm_for(fake), temperature=0)(question="Capital of France?")
        fake.check()
        body = fake.last_request.json
    assert pred.answer == "Paris" and pred.confidence == 0.95
    assert pred._usage.prompt_tokens == 40 and pred._usage.completion_tokens == 9
    assert body["temperature"] == 0
    assert "Capital of France?" in body["messages"][-1]["content"]
    assert body["messages"][0]["role"] == "system"


def test_batch_and_abatch_through_litellm() -> None:
    def responder(request: RecordedRequest) -> Reply:
        number = int(user_text(request).split("[[ ## x ## ]]")[1].split()[0])
        return Reply(chat(y=number * number))

    with OpenAIChatFake(responder=responder) as fake:
        square = Predict("x: int -> y: int", lm=lm_for(fake))
        results = square.batch([{"x": i} for i in range(8)], num_threads=4, progress=False)
        async_results = asyncio.run(
            square.abatch([{"x": i} for i in range(8)], concurrency=4, progress=False)
        )
        fake.check()
        assert len(fake.requests) == 16
    assert [r.y for r in results] == [i * i for i in range(8)]
    assert [r.y for r in async_results] == [i * i for i in range(8)]


def test_chain_of_thought_with_native_reasoning_through_litellm() -> None:
    class ReasoningFake(OpenAIChatFake):
        reasoning_field = "reasoning_content"

    reply = Reply(chat(answer="4", confidence="1"), reasoning="2 plus 2 equals 4")
    with ReasoningFake(reply) as fake:
        lm = lm_for(fake, capabilities={"reasoning": True})
        pred = ChainOfThought(Answer, lm=lm)(question="2+2?")
        fake.check()
    assert pred.answer == "4"
    assert pred.reasoning == "2 plus 2 equals 4" and pred.reasoning.native


def test_best_of_n_sends_distinct_rollouts_that_do_not_reach_the_provider(tmp_path: Path) -> None:
    replies = [Reply(chat(answer=a, confidence="1")) for a in ["no", "yes!"]]
    with sf.context(cache_dir=str(tmp_path)), OpenAIChatFake(*replies) as fake:
        lm = lm_for(fake, cache=True)  # the cache must not answer attempt 2 with attempt 1's reply
        best = BestOfN(Predict(Answer, lm=lm), N=2, reward_fn=lambda i, p: len(p.answer))
        pred = best(question="Is it?")
        fake.check()
        bodies = [r.json for r in fake.requests]
    assert pred.answer == "yes!"
    assert len(bodies) == 2
    assert all("rollout_id" not in body for body in bodies)


def test_stream_through_litellm() -> None:
    with OpenAIChatFake(Reply(chat(answer="Paris is the capital", confidence="0.5"), chunk_chars=4)) as fake:
        items = list(Predict(Answer, lm=lm_for(fake)).stream(question="Capital?"))
        fake.check()
        assert fake.last_request.json.get("stream") is True
    pred = items[-1]
    assert isinstance(pred, sf.Prediction) and pred.answer == "Paris is the capital"
    assert len([e for e in items[:-1] if e.field == "answer"]) > 2


def test_saved_program_holds_no_secret(tmp_path: Path) -> None:
    with OpenAIChatFake() as fake:
        path = Predict(Answer, lm=lm_for(fake)).save(tmp_path / "qa.json")
    text = path.read_text()
    assert "sk-test-secret" not in text
    assert json.loads(text)["predictors"]["self"]["lm"]["state"]["model"] == "openai/gpt-4o-mini"


@pytest.fixture(autouse=True)
def _no_real_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
