"""The embedded local model (Gemma 3 270M via llama_cpp.server) behind programs: structured
outputs through the JSON adapter's step-down chain, ``n`` candidates, and a dead server replaced.

The server rejects ``response_format={"type": "json_schema", ...}`` (HTTP 500 carrying a request
validation error) but constrains generation by grammar for ``{"type": "json_object", "schema":
...}``. Marked ``local_model``: the real server is started once for this module in a private
cache dir, and every request is kept small (the machine has 2 cores).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator

import pytest

import sigform as sf
from sigform import local
from sigform.adapters.json_adapter import forget_step_downs

pytestmark = pytest.mark.local_model

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # tests are offline


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> Iterator[None]:
    forget_step_downs()
    yield
    forget_step_downs()


DEMOS = [
    {"text": "Maria Lopez turned 34 last week.", "name": "Maria Lopez", "age": 34},
    {"text": "At 71, Kenji Sato still runs every day.", "name": "Kenji Sato", "age": 71},
]


def test_json_adapter_steps_down_to_schema_constrained_json_object(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the chat route's response_format step-down: the embedded base model is asked in text mode by
    # default (a grammar on /completions), so this test names the chat mode it is about
    lm = sf.LM("local", cache=False, model_type="chat")
    extract = sf.Predict(
        "text -> name: str, age: int",
        demos=DEMOS,
        adapter=sf.JSONAdapter(),
        lm=lm,
        temperature=0,
        max_tokens=60,
    )
    with caplog.at_level(logging.WARNING, logger="sigform.adapters"):
        first = extract(text="Anna Berg is 28 years old.")
        second = extract(text="Tom Reed, aged 45, lives in Leeds.")

    formats = [entry.params.get("response_format") for entry in lm.history]
    errors = [entry.error for entry in lm.history]
    assert len(formats) == 3
    # 1: the strict json_schema request, rejected at once (a bad request: no retries)
    assert formats[0]["type"] == "json_schema" and errors[0] is not None
    assert errors[0].startswith("BadRequestError")
    # 2: the step down - json_object carrying the schema (grammar-constrained)
    assert formats[1]["type"] == "json_object" and formats[1]["schema"]["required"] == ["name", "age"]
    assert errors[1] is None
    # 3: remembered - the next call goes straight to json_object with the schema
    assert formats[2] == formats[1] and errors[2] is None
    step_downs = [r for r in caplog.records if "rejected the json_schema response format" in r.getMessage()]
    assert len(step_downs) == 1 and "'local'" in step_downs[0].getMessage()
    for pred in (first, second):
        assert isinstance(pred.name, str) and pred.name
        assert isinstance(pred.age, int) and not isinstance(pred.age, bool)


def test_n_candidates_are_topped_up(server: str) -> None:
    # the server silently answers one choice however many are asked for
    lm = sf.LM("local", cache=False)
    completions = lm("Say a colour.", n=3, temperature=1.0, max_tokens=4)
    assert len(completions) == 3
    assert all(isinstance(c.text, str) for c in completions)
    assert [e.params.get("n") for e in lm.history] == [3]


def test_a_stopped_server_is_replaced_on_the_next_call(server: str) -> None:
    lm = sf.LM("local", cache=False)
    assert lm("Say hi.", max_tokens=3, temperature=0)
    before = local.current_server()
    assert before is not None
    local.stop_server()
    assert not before.is_alive()
    [again] = lm("Say hi.", max_tokens=3, temperature=0)
    after = local.current_server()
    assert after is not None and after.is_alive() and after.pid != before.pid
    assert again.finish_reason in ("stop", "length")
    assert lm.history[-1].api_base == after.api_base


def test_the_cache_survives_a_server_restart(server: str, tmp_path: object) -> None:
    # the local server's port changes when it is replaced; its answers stay cached
    with sf.context(cache_dir=str(tmp_path)):
        [first] = sf.LM("local")("Name a fruit.", max_tokens=4, temperature=0)
        before = local.current_server()
        local.stop_server()
        [again] = sf.LM("local")("Name a fruit.", max_tokens=4, temperature=0)
    after = local.current_server()
    assert before is not None and after is not None and after.port != before.port
    assert again.usage.cache_hit and again.text == first.text


def test_the_server_as_an_unknown_openai_compatible_endpoint_is_discovered(server: str) -> None:
    # the same llama.cpp server reached as a user would reach any server (no "local" knowledge):
    # the strict schema is tried, the rejection steps down to grammar-constrained json_object,
    # and what answered is saved for the next process
    from sigform.lm import capabilities

    # an earlier test stops the server on purpose and the local route replaces it on another
    # port: the fixture's address may be stale, so ask for the running server's address
    server = local.ensure_server()

    def extract() -> sf.Predict:
        # chat: a server this process started is known to be a base model (text mode) otherwise
        lm = sf.LM(
            f"openai/{local.MODEL_NAME}", api_base=server, api_key="local", cache=False, model_type="chat"
        )
        return sf.Predict(
            "text -> name: str, age: int", demos=DEMOS, adapter=sf.JSONAdapter(), lm=lm, temperature=0,
            max_tokens=60,
        )

    first = extract()
    pred = first(text="Anna Berg is 28 years old.")
    assert isinstance(pred.age, int) and not isinstance(pred.age, bool)
    formats = [entry.params.get("response_format", {}).get("type") for entry in first.lm.history]
    assert formats == ["json_schema", "json_object"]
    assert first.lm.history[0].error is not None and first.lm.history[1].error is None
    saved = json.loads(capabilities.capabilities_path().read_text())["endpoints"]
    key = capabilities.endpoint_key(f"openai/{local.MODEL_NAME}", server)
    assert saved[key]["best"] == "json_object_schema"

    capabilities.forget()  # as a new process would start: only the file remembers
    second = extract()
    second(text="Tom Reed, aged 45, lives in Leeds.")
    assert [e.params["response_format"]["type"] for e in second.lm.history] == ["json_object"]
