"""Token counting, model limits, message normalisation and cache markers, one unit at a time."""

from __future__ import annotations

import copy
import itertools
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sigform.conversation import (
    CACHE_CONTROL,
    ModelLimits,
    mark_prefix,
    model_limits,
    normalise,
    output_reserve,
    token_counter,
)
from sigform.provider.normalise import CONVERSATION_START, merge_content
from sigform.provider.tokens import MEDIA_TOKENS, estimate_text, upper_bound
from sigform.types import History

Message = dict[str, Any]


# -- tokens ------------------------------------------------------------------------------------
def test_known_models_are_counted_with_their_tokenizer() -> None:
    for model in ("openai/gpt-4o", "anthropic/claude-sonnet-4-5"):
        counter = token_counter(model)
        assert counter.exact
        assert counter.text("hello world") == 2
        assert counter.message({"role": "user", "content": "hello world"}) == 2 + 4


def test_models_whose_tokenizer_would_be_downloaded_are_estimated() -> None:
    # litellm would fetch the Llama 2 / Llama 3 tokenizers from the Hugging Face hub
    for model in ("together_ai/meta-llama/llama-3-8b-instruct", "replicate/meta/llama-2-70b-chat"):
        counter = token_counter(model)
        assert not counter.exact
        assert counter.text("x" * 40) == 10


def test_forced_estimate_and_media_parts() -> None:
    counter = token_counter("openai/gpt-4o", exact=False)
    assert not counter.exact and counter.text("abcd" * 10) == 10
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "abcd"},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}},
        ],
    }
    assert counter.message(message) == 1 + MEDIA_TOKENS + 4  # the image is never fetched


def test_tool_calls_and_results_are_counted() -> None:
    counter = token_counter(None)
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
    }
    assert counter.message(call) > 4
    assert counter.total([call], tools=[{"type": "function", "function": {"name": "f"}}]) > counter.message(
        call
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=5))
def test_upper_bound_is_never_below_the_real_count(texts: list[str]) -> None:
    messages = [{"role": "user", "content": t} for t in texts]
    exact = token_counter("openai/gpt-4o")
    assert exact.exact
    assert upper_bound(messages) >= exact.total(messages)
    assert estimate_text("".join(texts)) <= upper_bound(messages)


def test_model_limits_from_the_map_and_overrides() -> None:
    limits = model_limits("anthropic/claude-sonnet-4-5")
    assert limits.context_window and limits.context_window >= 200_000 and limits.max_output
    assert model_limits("anthropic/claude-sonnet-4-5", context_window=8000).context_window == 8000
    assert model_limits("openai/no-such-model-xyz") == ModelLimits(None, None)
    assert model_limits("scripted", context_window=100, max_output=10) == ModelLimits(100, 10)


def test_output_reserve() -> None:
    assert output_reserve(ModelLimits(100_000, 8000), None) == 8000
    assert output_reserve(ModelLimits(100_000, 100_000), None) == 25_000  # capped at a quarter
    assert output_reserve(ModelLimits(100_000, 8000), 500) == 500  # the request's max_tokens
    assert output_reserve(ModelLimits(None, None), None) == 4096


# -- normalise ---------------------------------------------------------------------------------
def _texts(messages: list[Message]) -> list[str]:
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out += [p for p in content.split("\n\n") if p.strip()]
        elif isinstance(content, list):
            out += [p["text"] for p in content if p.get("type") == "text" and p["text"].strip()]
    return out


@st.composite
def chat(draw: Any) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": "sys-0"})
    n = 0
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "empty", "tools"]))
        if kind == "system":
            messages.append({"role": "system", "content": f"sys-{i + 1}"})
        elif kind in ("user", "assistant"):
            messages.append({"role": kind, "content": f"{kind}-{i}"})
        elif kind == "empty":
            messages.append({"role": "assistant", "content": draw(st.sampled_from(["", "  ", None]))})
        else:
            ids = [f"call_{n + k}_{'x' * draw(st.integers(0, 12))}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            messages.append(
                {
                    "role": "assistant",
                    "content": draw(st.sampled_from([None, "", f"thinking-{i}"])),
                    "tool_calls": [
                        {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        for c in ids
                    ],
                }
            )
            for c in draw(st.permutations(ids)):
                messages.append({"role": "tool", "tool_call_id": c, "content": f"result-{c}"})
    messages.append({"role": "user", "content": "final"})
    return messages


@settings(max_examples=200, deadline=None)
@given(chat(), st.sampled_from([None, "openai", "anthropic", "gemini", "mistral", "bedrock", "cohere"]))
def test_normalise_properties(messages: list[Message], provider: str | None) -> None:
    before = copy.deepcopy(messages)
    out = normalise(messages, provider)
    assert messages == before  # input untouched
    # one system message, first, holding every system text in order
    systems = [m for m in out if m["role"] == "system"]
    originals = [m["content"] for m in messages if m["role"] == "system"]
    if originals:
        assert out[0]["role"] == "system" and len(systems) == 1
        assert _texts([out[0]]) == originals
    else:
        assert not systems
    # no content lost: every non-empty text appears, in order (tool results: in call order)
    sent = _texts([m for m in out if m["role"] not in ("system", "tool")])
    if sent and sent[0] == CONVERSATION_START:  # the user turn some providers need first
        sent = sent[1:]
    assert sent == _texts([m for m in messages if m["role"] not in ("system", "tool")])
    assert sorted(_texts([m for m in out if m["role"] == "tool"])) == sorted(
        _texts([m for m in messages if m["role"] == "tool"])
    )
    # pairing still valid (what every provider needs), results in call order
    History.from_turns(out[1:] if systems else out)
    for i, m in enumerate(out):
        if m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            assert [r["tool_call_id"] for r in out[i + 1 : i + 1 + len(ids)]] == ids
    # no empty assistant turn left
    assert all(m["role"] != "assistant" or m.get("content") or m.get("tool_calls") for m in out)
    if provider == "mistral":
        assert all(a["role"] != b["role"] or a["role"] == "tool" for a, b in itertools.pairwise(out))
        ids = [c["id"] for m in out for c in m.get("tool_calls") or ()]
        assert all(len(i) == 9 and i.isalnum() for i in ids) and len(set(ids)) == len(ids)
    if provider in ("anthropic", "gemini", "bedrock"):
        assert next(m for m in out if m["role"] != "system")["role"] == "user"
    assert normalise(out, provider) == out  # idempotent
    assert normalise(messages, provider) == out  # deterministic


def test_mistral_ids_map_the_same_way_every_time() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": "r"},
    ]
    one, two = normalise(messages, "mistral"), normalise(messages, "mistral")
    new = one[1]["tool_calls"][0]["id"]
    assert new == two[1]["tool_calls"][0]["id"] == one[2]["tool_call_id"] != "call_abc"
    valid = [dict(m) for m in messages]
    valid[1] = {**valid[1], "tool_calls": [{**valid[1]["tool_calls"][0], "id": "Abc123xyz"}]}
    valid[2] = {**valid[2], "tool_call_id": "Abc123xyz"}
    assert normalise(valid, "mistral") == valid  # valid ids are kept


def test_merge_content_keeps_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    assert merge_content("a", "b") == "a\n\nb"
    assert merge_content("a", [image]) == [{"type": "text", "text": "a"}, image]
    assert merge_content(None, "b") == "b" and merge_content("a", "") == "a"


# -- prompt cache markers ------------------------------------------------------------------------
PREFIX = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": "demo q"},
    {"role": "assistant", "content": [{"type": "text", "text": "demo a"}]},
    {"role": "user", "content": "q"},
]


def test_mark_prefix_puts_one_breakpoint_on_the_last_prefix_block() -> None:
    before = copy.deepcopy(PREFIX)
    out = mark_prefix(PREFIX, 3, "anthropic")
    assert before == PREFIX
    assert out[2]["content"] == [{"type": "text", "text": "demo a", "cache_control": CACHE_CONTROL}]
    assert out[:2] == PREFIX[:2] and out[3] == PREFIX[3]
    assert mark_prefix(out, 3, "anthropic") == out  # already marked: left alone
    only_system = mark_prefix(PREFIX, 1, "bedrock")
    assert only_system[0]["content"] == [{"type": "text", "text": "rules", "cache_control": CACHE_CONTROL}]


@pytest.mark.parametrize(
    ("provider", "model", "marked"),
    [
        ("anthropic", "anthropic/claude-sonnet-4-5", True),
        ("bedrock", "bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0", True),
        ("vertex_ai", "vertex_ai/claude-sonnet-4-5", True),
        ("vertex_ai", "vertex_ai/gemini-2.5-pro", False),
        ("openrouter", "openrouter/anthropic/claude-sonnet-4.5", True),
        ("openai", "openai/gpt-4o", False),
        ("gemini", "gemini/gemini-2.5-flash", False),
        ("mistral", "mistral/mistral-large-latest", False),
        (None, "scripted", False),
    ],
)
def test_markers_only_for_providers_that_take_them(provider: str | None, model: str, marked: bool) -> None:
    out = mark_prefix(PREFIX, 3, provider, model)
    assert (out != PREFIX) == marked
