"""The call path against the scripted LM: stop sequences, reask, fallback, n > 1, terminal
errors, JSON response-format step-down, two-step extraction, async, hooks."""

from __future__ import annotations

import asyncio
import logging

import pytest

import sigform as sf
from sigform.adapters import ChatAdapter, JSONAdapter, TwoStepAdapter, XMLAdapter
from sigform.adapters.json_adapter import forget_step_downs
from sigform.errors import BadRequestError, ContextWindowError, FieldValueError, ProviderError, StructureError
from sigform.hooks import Callback
from sigform.lm.interface import Completion, Usage
from sigform.testing import ScriptedLM

SIG = sf.make_signature("question -> answer: str, n: int")
GOOD = "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\n3\n\n[[ ## completed ## ]]"
BAD_VALUE = "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\nmany\n\n[[ ## completed ## ]]"


@pytest.fixture(autouse=True)
def _fresh_step_downs() -> None:
    forget_step_downs()


def test_clean_answer_and_stop_sequence() -> None:
    lm = ScriptedLM([GOOD])
    result = ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}]
    assert lm.last_kwargs["stop"] == ["[[ ## completed ## ]]"]
    assert result.attempts == 1 and result.adapter_names == ["ChatAdapter"]
    assert result.messages[0]["role"] == "system" and result.completions[0].text == GOOD


def test_no_stop_sequence_when_unsupported() -> None:
    lm = ScriptedLM([GOOD], features=set())
    assert ChatAdapter()(lm, SIG, [], {"question": "q"}) == [{"answer": "Paris", "n": 3}]
    assert "stop" not in lm.last_kwargs


def test_value_failure_reasks_with_previous_answer_and_errors() -> None:
    lm = ScriptedLM([BAD_VALUE, GOOD])
    result = ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}] and result.attempts == 2
    retry = lm.calls[1].messages
    assert retry[-2] == {"role": "assistant", "content": BAD_VALUE}
    assert "`n`" in retry[-1]["content"] and "many" in retry[-1]["content"]
    assert result.adapter_names == ["ChatAdapter"]  # a value failure is not a fallback


def test_reask_is_bounded_and_final_error_lists_fields_and_raws() -> None:
    lm = ScriptedLM([BAD_VALUE, BAD_VALUE])
    with pytest.raises(FieldValueError) as info:
        ChatAdapter(max_reasks=1).run(lm, SIG, [], {"question": "q"})
    err = info.value
    assert err.fields == ["n"] and "ChatAdapter" in (err.adapter or "")
    assert [c.text for c in err.completions] == [BAD_VALUE, BAD_VALUE]
    assert len(lm.calls) == 2


def test_structure_failure_falls_back_to_json() -> None:
    lm = ScriptedLM(["I think it is Paris, about 3.", '{"answer": "Paris", "n": 3}'])
    result = ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}]
    assert result.adapter_names == ["ChatAdapter", "JSONAdapter"]
    assert lm.calls[1].kwargs["response_format"]["type"] == "json_object"
    assert "JSON object" in lm.calls[1].messages[0]["content"]


def test_fallback_can_be_turned_off() -> None:
    lm = ScriptedLM(["no structure here"])
    with pytest.raises(StructureError) as info:
        ChatAdapter(fallback=False).run(lm, SIG, [], {"question": "q"})
    assert info.value.adapter == "ChatAdapter" and set(info.value.fields) == {"answer", "n"}
    assert len(lm.calls) == 1


def test_json_adapter_does_not_fall_back_to_itself() -> None:
    lm = ScriptedLM(["no json"])
    with pytest.raises(StructureError):
        JSONAdapter().run(lm, SIG, [], {"question": "q"})
    assert len(lm.calls) == 1


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_empty_refusal_or_length_stop_gets_its_own_error(reason: str) -> None:
    lm = ScriptedLM([{"text": "", "finish_reason": reason}])
    with pytest.raises(StructureError, match=reason):
        ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert len(lm.calls) == 1  # no fallback, no reask


def test_truncated_answer_without_completed_is_not_accepted() -> None:
    cut = "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\n3"
    lm = ScriptedLM([{"text": cut, "finish_reason": "length"}])
    with pytest.raises(StructureError, match="max_tokens"):
        ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert len(lm.calls) == 1


def test_context_window_error_propagates_without_fallback() -> None:
    lm = ScriptedLM([ContextWindowError("too long")])
    with pytest.raises(ContextWindowError):
        ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert len(lm.calls) == 1


def test_n_greater_than_one_retries_only_failed_candidates() -> None:
    lm = ScriptedLM([GOOD, BAD_VALUE, "prose only", GOOD, '{"answer": "Rome", "n": 1}'])
    result = ChatAdapter().run(lm, SIG, [], {"question": "q"}, n=3)
    assert result.outputs == [
        {"answer": "Paris", "n": 3},
        {"answer": "Paris", "n": 3},
        {"answer": "Rome", "n": 1},
    ]
    assert lm.calls[0].kwargs["n"] == 3
    assert "n" not in lm.calls[1].kwargs  # the reask of candidate 2 alone
    assert lm.calls[2].kwargs["n"] == 1 and "response_format" in lm.calls[2].kwargs  # fallback of candidate 3
    assert result.adapter_names == ["ChatAdapter", "JSONAdapter"] and result.attempts == 3


def test_usage_is_summed_over_requests() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=5)
    lm = ScriptedLM([BAD_VALUE, GOOD], usage=usage)
    result = ChatAdapter().run(lm, SIG, [], {"question": "q"})
    assert result.usage.prompt_tokens == 20 and result.usage.completion_tokens == 10


def test_json_modes_follow_capabilities() -> None:
    answer = '{"answer": "Paris", "n": 3}'
    strict = ScriptedLM([answer], features={"json_schema", "json_object"})
    JSONAdapter().run(strict, SIG, [], {"question": "q"})
    fmt = strict.last_kwargs["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert list(fmt["json_schema"]["schema"]["properties"]) == ["answer", "n"]
    plain = ScriptedLM([answer], features=set())
    JSONAdapter().run(plain, SIG, [], {"question": "q"})
    assert "response_format" not in plain.last_kwargs


def test_json_step_down_is_remembered_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    answer = '{"answer": "Paris", "n": 3}'
    lm = ScriptedLM(
        [BadRequestError("schema unsupported"), answer, answer],
        features={"json_schema", "json_object"},
        model="m1",
    )
    with caplog.at_level(logging.WARNING, logger="sigform.adapters"):
        JSONAdapter().run(lm, SIG, [], {"question": "q"})
        JSONAdapter().run(lm, SIG, [], {"question": "q"})
    kinds = [c.kwargs["response_format"]["type"] for c in lm.calls]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert "schema" in lm.calls[1].kwargs["response_format"]  # the json_object step carries the schema
    assert len([r for r in caplog.records if r.name == "sigform.adapters"]) == 1


def test_provider_500_on_json_schema_steps_down_but_does_not_loop() -> None:
    lm = ScriptedLM(
        [ProviderError("HTTP 500"), ProviderError("HTTP 500")], features={"json_schema", "json_object"}
    )
    with pytest.raises(ProviderError):
        JSONAdapter().run(lm, SIG, [], {"question": "q"})
    assert [c.kwargs["response_format"]["type"] for c in lm.calls] == ["json_schema", "json_object"]


def test_xml_adapter_call() -> None:
    lm = ScriptedLM(["<answer>Paris</answer><n>3</n>"])
    assert XMLAdapter()(lm, SIG, [], {"question": "q"}) == [{"answer": "Paris", "n": 3}]


def test_two_step_uses_extraction_lm() -> None:
    main = ScriptedLM(["Well, Paris is the capital; I count three such cities."])
    extractor = ScriptedLM(['{"answer": "Paris", "n": 3}'])
    result = TwoStepAdapter(extraction_lm=extractor).run(main, SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}]
    assert "Paris is the capital" in extractor.last_messages[-1]["content"]
    assert "[[ ## response ## ]]" in extractor.last_messages[-1]["content"]
    assert len(main.calls) == 1 and result.adapter_names == ["TwoStepAdapter", "JSONAdapter"]


def test_two_step_defaults_to_same_lm() -> None:
    lm = ScriptedLM(["free answer: Paris, 3", "[[ ## answer ## ]]\nParis\n[[ ## n ## ]]\n3"])
    adapter = TwoStepAdapter(extraction_adapter=ChatAdapter())
    assert adapter(lm, SIG, [], {"question": "q"}) == [{"answer": "Paris", "n": 3}]
    assert len(lm.calls) == 2


def test_async_run_matches_sync() -> None:
    lm = ScriptedLM([BAD_VALUE, GOOD])
    result = asyncio.run(ChatAdapter().arun(lm, SIG, [], {"question": "q"}))
    assert result.outputs == [{"answer": "Paris", "n": 3}] and result.attempts == 2
    lm2 = ScriptedLM([GOOD])
    assert asyncio.run(ChatAdapter().acall(lm2, SIG, [], {"question": "q"})) == [{"answer": "Paris", "n": 3}]


def test_format_and_parse_events_are_emitted() -> None:
    seen: list[str] = []

    class Recorder(Callback):
        def on_format(self, event) -> None:  # type: ignore[no-untyped-def]
            seen.append(f"format:{event.adapter}")

        def on_parse(self, event) -> None:  # type: ignore[no-untyped-def]
            seen.append("parse:" + ("error" if event.get("error") else "ok"))

    with sf.context(callbacks=[Recorder()]):
        ChatAdapter().run(ScriptedLM([BAD_VALUE, GOOD]), SIG, [], {"question": "q"})
    assert seen == ["format:ChatAdapter", "parse:error", "parse:ok"]


def test_completion_objects_are_kept() -> None:
    completion = Completion(text=GOOD, finish_reason="stop", model="x")
    result = ChatAdapter().run(ScriptedLM([completion]), SIG, [], {"question": "q"})
    assert result.completions == [completion]
