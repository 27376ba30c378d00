"""Tests for sigform.testing.ScriptedLM: scripts, n, recording, errors, features, concurrency."""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from sigform.errors import BadRequestError, RateLimitError
from sigform.lm.interface import Completion, LMProtocol, ToolCall, Usage
from sigform.testing import ScriptedCall, ScriptedLM, ScriptError, last_user_text


def user(text: str) -> list[dict]:
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": text}]


def test_implements_protocol_and_answers_in_order() -> None:
    lm = ScriptedLM(["first", "second"])
    assert isinstance(lm, LMProtocol)
    assert lm.model == "scripted"
    [a] = lm(user("q1"))
    [b] = lm(user("q2"))
    assert (a.text, b.text) == ("first", "second")
    assert a.finish_reason == "stop" and a.model == "scripted" and a.provider == "scripted"
    assert a.usage == Usage()
    assert lm.remaining == 0


def test_completion_items_pass_through_unchanged() -> None:
    c = Completion(
        text="t", reasoning="because", tool_calls=(ToolCall("f", {"x": 1}, "id1"),), finish_reason="length"
    )
    [got] = ScriptedLM([c])(user("q"))
    assert got is c
    assert got.truncated


def test_dict_items_build_completions_with_usage_and_tool_calls() -> None:
    lm = ScriptedLM(
        [
            {
                "text": "",
                "tool_calls": [{"name": "search", "arguments": {"q": "x"}, "id": "c1"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3},
                "finish_reason": "tool_calls",
            }
        ]
    )
    [c] = lm(user("q"))
    assert c.tool_calls == (ToolCall("search", {"q": "x"}, "c1"),)
    assert c.usage.total_tokens == 13
    assert c.finish_reason == "tool_calls"


def test_dict_item_with_unknown_key_is_a_clear_error() -> None:
    lm = ScriptedLM([{"text": "a", "txet": "b"}])
    with pytest.raises(ScriptError, match="txet"):
        lm(user("q"))


def test_default_usage_applies_to_string_responses() -> None:
    lm = ScriptedLM(["a"], usage=Usage(prompt_tokens=5, completion_tokens=2, cost=0.01))
    [c] = lm(user("q"))
    assert c.usage.cost == 0.01 and c.usage.total_tokens == 7


def test_exceptions_are_raised_when_reached() -> None:
    lm = ScriptedLM([RateLimitError("slow down", retry_after=1.0), "ok", ValueError])
    with pytest.raises(RateLimitError, match="slow down"):
        lm(user("q"))
    assert lm(user("q"))[0].text == "ok"
    with pytest.raises(ValueError):
        lm(user("q"))
    assert len(lm.calls) == 3


def test_callable_items_receive_messages_and_kwargs() -> None:
    seen: list = []

    def answer(messages, kwargs):
        seen.append((messages, kwargs))
        return "echo: " + messages[-1]["content"]

    lm = ScriptedLM(["plain", answer])
    lm(user("one"))
    [c] = lm(user("two"), temperature=0.5)
    assert c.text == "echo: two"
    assert seen[0][1] == {"temperature": 0.5}


def test_single_callable_answers_every_call() -> None:
    lm = ScriptedLM(lambda messages, kwargs: f"#{len(messages)}")
    for _ in range(5):
        assert lm(user("q"))[0].text == "#2"
    assert lm.remaining is None
    assert len(lm.calls) == 5


def test_iterators_are_accepted() -> None:
    lm = ScriptedLM(itertools.repeat("same"))
    assert [lm(user("q"))[0].text for _ in range(3)] == ["same"] * 3


def test_n_consumes_n_responses() -> None:
    lm = ScriptedLM(["a", "b", "c", "d"])
    out = lm(user("q"), n=3)
    assert [c.text for c in out] == ["a", "b", "c"]
    assert lm(user("q"))[0].text == "d"


def test_n_with_callable_returning_list() -> None:
    lm = ScriptedLM(lambda m, kw: [f"cand{i}" for i in range(kw["n"])])
    assert [c.text for c in lm(user("q"), n=4)] == ["cand0", "cand1", "cand2", "cand3"]


def test_n_with_callable_returning_one_is_called_n_times() -> None:
    counter = itertools.count()
    lm = ScriptedLM(lambda m, kw: str(next(counter)))
    assert [c.text for c in lm(user("q"), n=3)] == ["0", "1", "2"]


def test_callable_list_of_wrong_length_is_an_error() -> None:
    lm = ScriptedLM(lambda m, kw: ["a", "b"])
    with pytest.raises(ScriptError, match="returned 2 responses for a call with n=3"):
        lm(user("q"), n=3)


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_bad_n_is_rejected(n) -> None:
    with pytest.raises(BadRequestError, match="positive integer"):
        ScriptedLM(["a"])(user("q"), n=n)


def test_exhaustion_error_says_how_many_calls_and_shows_messages() -> None:
    lm = ScriptedLM(["only"])
    lm(user("first question"))
    with pytest.raises(ScriptError) as info:
        lm(user("second question about Paris"))
    text = str(info.value)
    assert "call #2" in text and "all 1 scripted responses" in text
    assert "second question about Paris" in text
    assert "user:" in text


def test_exhaustion_mid_n() -> None:
    lm = ScriptedLM(["a", "b"])
    with pytest.raises(ScriptError, match="exhausted"):
        lm(user("q"), n=3)


def test_calls_are_recorded_as_deep_copies() -> None:
    lm = ScriptedLM(["a", "b"])
    messages = user("hello")
    lm(messages, temperature=0.0, stop=["\n\n"])
    messages[-1]["content"] = "mutated"
    assert lm.last_messages[-1]["content"] == "hello"
    call = lm.calls[0]
    assert isinstance(call, ScriptedCall)
    msgs, kwargs = call  # unpacks like a tuple
    assert msgs[-1]["content"] == "hello"
    assert kwargs == {"temperature": 0.0, "stop": ["\n\n"]}
    assert lm.last_kwargs is kwargs


def test_last_messages_before_any_call_is_clear() -> None:
    with pytest.raises(ScriptError, match="not been called"):
        _ = ScriptedLM(["a"]).last_messages


def test_calls_recorded_even_when_the_script_raises() -> None:
    lm = ScriptedLM([RuntimeError("boom")])
    with pytest.raises(RuntimeError):
        lm(user("q"))
    assert last_user_text(lm.last_messages) == "q"


@pytest.mark.parametrize("bad", ["just a string", Completion(text="x"), {"text": "x"}])
def test_single_non_list_response_is_rejected_with_hint(bad) -> None:
    with pytest.raises(ScriptError, match="wrap a single response in a list"):
        ScriptedLM(bad)


def test_bad_item_kind_reported_with_index() -> None:
    with pytest.raises(ScriptError, match=r"responses\[1\] is a int"):
        ScriptedLM(["ok", 42])


def test_supports_defaults_and_custom_features() -> None:
    lm = ScriptedLM(["a"])
    assert lm.supports("stop") and lm.supports("json_object")
    assert not lm.supports("json_schema") and not lm.supports("tools") and not lm.supports("whatever")
    lm2 = ScriptedLM(["a"], features={"json_schema", "tools"})
    assert lm2.supports("tools") and not lm2.supports("stop")


@pytest.mark.parametrize(
    ("kwargs", "feature"),
    [
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"response_format": {"type": "json_schema", "json_schema": {}}}, "json_schema"),
        ({"stop": ["x"]}, "stop"),
    ],
)
def test_strict_refuses_undeclared_features(kwargs, feature) -> None:
    lm = ScriptedLM(["a"], features=set())
    with pytest.raises(BadRequestError, match=feature):
        lm(user("q"), **kwargs)
    # the same request is fine once declared, or with strict=False
    assert ScriptedLM(["a"], features={feature})(user("q"), **kwargs)[0].text == "a"
    assert ScriptedLM(["a"], features=set(), strict=False)(user("q"), **kwargs)[0].text == "a"


def test_strict_treats_model_class_response_format_as_json_schema() -> None:
    class Out:
        pass

    with pytest.raises(BadRequestError, match="json_schema"):
        ScriptedLM(["a"])(user("q"), response_format=Out)


def test_strict_refuses_multimodal_parts_unless_declared() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        }
    ]
    with pytest.raises(BadRequestError, match="multimodal"):
        ScriptedLM(["a"])(messages)
    lm = ScriptedLM(["a"], features={"multimodal"})
    assert lm(messages)[0].text == "a"
    assert last_user_text(lm.last_messages) == "what is this?"


def test_by_input_answers_by_last_user_message_regardless_of_order() -> None:
    lm = ScriptedLM.by_input({"France": "Paris", "Japan": "Tokyo"})
    assert lm(user("[[ ## question ## ]]\nCapital of Japan?"))[0].text == "Tokyo"
    assert lm(user("Capital of France?"))[0].text == "Paris"
    assert lm(user("Capital of France?"))[0].text == "Paris"  # reusable


def test_by_input_exact_match_and_most_specific_overlap() -> None:
    lm = ScriptedLM.by_input({"2": "two", "12": "twelve", "What is 12?": "exact"})
    assert lm(user("What is 12?"))[0].text == "exact"
    assert lm(user("number 12 please"))[0].text == "twelve"
    assert lm(user("number 2 please"))[0].text == "two"


def test_by_input_ambiguous_keys_are_an_error() -> None:
    lm = ScriptedLM.by_input({"cat": "a", "dog": "b"})
    with pytest.raises(ScriptError, match="all match"):
        lm(user("cat and dog"))


def test_by_input_no_match_and_default() -> None:
    lm = ScriptedLM.by_input({"cat": "meow"})
    with pytest.raises(ScriptError, match="no key matches") as info:
        lm(user("a horse"))
    assert "a horse" in str(info.value) and "cat" in str(info.value)
    lm2 = ScriptedLM.by_input({"cat": "meow"}, default="??")
    assert lm2(user("a horse"))[0].text == "??"


def test_by_input_function_and_options() -> None:
    lm = ScriptedLM.by_input(lambda text: text.upper(), model="m", features={"tools"})
    assert lm(user("shout"))[0].text == "SHOUT"
    assert lm.model == "m" and lm.supports("tools")


def test_by_input_reads_text_parts_and_values_may_be_errors() -> None:
    lm = ScriptedLM.by_input({"bad": RateLimitError("nope"), "good": "fine"}, features={"multimodal"})
    parts = [{"type": "text", "text": "good"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert lm([{"role": "user", "content": parts}])[0].text == "fine"
    with pytest.raises(RateLimitError):
        lm(user("bad"))


def test_acall_with_sync_and_async_callables() -> None:
    async def slow(messages, kwargs):
        await asyncio.sleep(0)
        return "async answer"

    lm = ScriptedLM(["sync answer", slow])

    async def main() -> list[str]:
        a = await lm.acall(user("q"))
        b = await lm.acall(user("q"))
        return [a[0].text, b[0].text]

    assert asyncio.run(main()) == ["sync answer", "async answer"]


def test_async_callable_in_sync_call_is_clear_error() -> None:
    async def fn(messages, kwargs):
        return "x"

    with pytest.raises(ScriptError, match="acall"):
        ScriptedLM([fn])(user("q"))


def test_concurrent_async_calls_each_get_one_response() -> None:
    lm = ScriptedLM([str(i) for i in range(50)])

    async def main() -> list[str]:
        results = await asyncio.gather(*(lm.acall(user(f"q{i}")) for i in range(50)))
        return [r[0].text for r in results]

    assert sorted(asyncio.run(main()), key=int) == [str(i) for i in range(50)]
    assert len(lm.calls) == 50


def test_threads_never_share_or_skip_a_response() -> None:
    lm = ScriptedLM([str(i) for i in range(400)])
    barrier = threading.Barrier(8)

    def worker(k: int) -> list[str]:
        barrier.wait()
        return [lm(user(f"w{k}"))[0].text for _ in range(50)]

    with ThreadPoolExecutor(8) as pool:
        got = [t for chunk in pool.map(worker, range(8)) for t in chunk]
    assert sorted(got, key=int) == [str(i) for i in range(400)]
    assert len(lm.calls) == 400
    assert lm.remaining == 0


def test_by_input_is_safe_under_threads() -> None:
    table = {f"item-{i}-end": f"answer {i}" for i in range(40)}
    lm = ScriptedLM.by_input(table)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: lm(user(f"item-{i}-end"))[0].text, range(40)))
    assert got == [f"answer {i}" for i in range(40)]


def test_repr_is_short() -> None:
    lm = ScriptedLM(["a", "b"])
    lm(user("q"))
    assert repr(lm) == "ScriptedLM(model='scripted', calls=1, remaining=1)"
