"""What each provider receives for a multi-turn conversation with tool calls, once sigform has
normalised it and litellm has translated it (loopback provider fakes record the wire request);
prompt-cache markers on the wire and cached-token accounting from the fakes' usage."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map in tests

import sigform
from sigform.conversation import Layout, normalise, send, tool_units
from sigform.provider.normalise import CONVERSATION_START
from sigform.testing.providers import (
    AnthropicFake,
    BedrockConverseFake,
    CohereFake,
    FakeProvider,
    GeminiFake,
    MistralFake,
    OpenAIChatFake,
    Reply,
)
from sigform.testing.providers.caching import PromptCacheBilling

API_KEY = "sk-test-secret-0123456789"
MODELS = {
    "openai": (OpenAIChatFake, "gpt-4o"),
    "anthropic": (AnthropicFake, "claude-sonnet-4-5"),
    "gemini": (GeminiFake, "gemini-2.5-flash"),
    "mistral": (MistralFake, "mistral-large-latest"),
    "cohere": (CohereFake, "command-a-03-2025"),
    "bedrock": (BedrockConverseFake, "anthropic.claude-3-7-sonnet-20250219-v1:0"),
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    for name in ("get_weather", "get_time")
]


def _call(call_id: str, name: str, city: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"city": city})},
    }


def conversation() -> tuple[list[dict[str, Any]], Layout]:
    """System + one demo, then a history that has everything providers trip over: a second
    system message, two user turns in a row, results answered out of call order, an empty
    assistant turn, OpenAI-style call ids; then the current question."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Cold."},
        # -- history
        {"role": "system", "content": "Prefer metric units."},
        {"role": "user", "content": "Plan my day in Paris."},
        {"role": "user", "content": "And Rome, please."},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                _call("call_Wq3kX9vB2nL5", "get_weather", "Paris"),
                _call("call_Pz8mR1tY6uE4", "get_time", "Rome"),
            ],
        },
        {"role": "tool", "tool_call_id": "call_Pz8mR1tY6uE4", "content": "14:05"},
        {"role": "tool", "tool_call_id": "call_Wq3kX9vB2nL5", "content": "18C, sunny"},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "Paris is sunny; it is 14:05 in Rome."},
        # -- the current request
        {"role": "user", "content": "So, umbrella or not?"},
    ]
    return messages, Layout(3, tool_units(messages, 3, len(messages) - 1))


def _lm(fake: FakeProvider, model: str, **options: Any) -> sigform.LM:
    kwargs = fake.litellm_kwargs(model, api_key=API_KEY)
    return sigform.LM(kwargs.pop("model"), cache=False, num_retries=0, **kwargs, **options)


def _send(name: str, messages: list[dict[str, Any]], layout: Layout, reply: Any, **kw: Any) -> Any:
    fake_cls, model = MODELS[name]
    with fake_cls(responder=reply) if callable(reply) else fake_cls(reply) as fake:
        lm = _lm(fake, model)
        completions = send(lm, messages, {"tools": TOOLS, **kw}, layout=layout)
    fake.check()
    return fake, lm, completions


# -- wire readers: (role, kinds) per turn, calls, results ------------------------------------
def _openai_turns(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body["messages"]
    return {
        "roles": [m["role"] for m in msgs],
        "system": [m["content"] for m in msgs if m["role"] == "system"],
        "calls": [(c["id"], c["function"]["name"]) for m in msgs for c in m.get("tool_calls") or ()],
        "results": [(m["tool_call_id"], m["content"]) for m in msgs if m["role"] == "tool"],
        "texts": [m["content"] for m in msgs if m["role"] in ("user", "assistant") and m.get("content")],
    }


def _anthropic_turns(body: dict[str, Any]) -> dict[str, Any]:
    blocks = [(m["role"], b) for m in body["messages"] for b in m["content"]]
    return {
        "roles": [m["role"] for m in body["messages"]],
        "system": [b["text"] for b in body["system"]],
        "calls": [(b["id"], b["name"]) for _, b in blocks if b["type"] == "tool_use"],
        "results": [(b["tool_use_id"], b["content"]) for _, b in blocks if b["type"] == "tool_result"],
        "texts": [b["text"] for _, b in blocks if b["type"] == "text"],
    }


def _bedrock_turns(body: dict[str, Any]) -> dict[str, Any]:
    blocks = [(m["role"], b) for m in body["messages"] for b in m["content"]]
    return {
        "roles": [m["role"] for m in body["messages"]],
        "system": [b["text"] for b in body["system"] if "text" in b],
        "calls": [(b["toolUse"]["toolUseId"], b["toolUse"]["name"]) for _, b in blocks if "toolUse" in b],
        "results": [
            (b["toolResult"]["toolUseId"], b["toolResult"]["content"][0]["text"])
            for _, b in blocks
            if "toolResult" in b
        ],
        "texts": [b["text"] for _, b in blocks if "text" in b],
    }


def _gemini_turns(body: dict[str, Any]) -> dict[str, Any]:
    parts = [(c["role"], p) for c in body["contents"] for p in c["parts"]]
    system = body.get("system_instruction") or body.get("systemInstruction") or {}
    return {
        "roles": [c["role"] for c in body["contents"]],
        "system": [p["text"] for p in system.get("parts", [])],
        # no ids on the wire: calls and responses pair by position
        "calls": [
            (None, f["name"]) for _, p in parts if (f := p.get("function_call") or p.get("functionCall"))
        ],
        "results": [
            (f["name"], f["response"]["content"])
            for _, p in parts
            if (f := p.get("function_response") or p.get("functionResponse"))
        ],
        "texts": [p["text"] for _, p in parts if p.get("text")],
    }


READERS = {
    "openai": _openai_turns,
    "mistral": _openai_turns,
    "cohere": _openai_turns,
    "anthropic": _anthropic_turns,
    "bedrock": _bedrock_turns,
    "gemini": _gemini_turns,
}


@pytest.mark.parametrize("name", list(MODELS))
def test_multi_turn_tool_conversation_reaches_every_provider_intact(name: str) -> None:
    messages, layout = conversation()
    fake, _, completions = _send(name, messages, layout, Reply("Take an umbrella."))
    assert completions[0].text == "Take an umbrella."
    wire = READERS[name](fake.last_request.json)
    # one system message, first (the history's system message merged into it, in order)
    assert "\n\n".join(wire["system"]) == "Answer briefly.\n\nPrefer metric units."
    if name in ("openai", "mistral", "cohere"):
        assert wire["roles"][0] == "system" and wire["roles"].count("system") == 1
    # every call paired with its result, results in the order of the calls
    assert [n for _, n in wire["calls"]] == ["get_weather", "get_time"]
    result_texts = [r for _, r in wire["results"]]
    assert result_texts == ["18C, sunny", "14:05"]
    if name == "gemini":
        assert [r for r, _ in wire["results"]] == ["get_weather", "get_time"]  # position = call order
    else:
        assert [i for i, _ in wire["results"]] == [i for i, _ in wire["calls"]]
    if name == "mistral":  # 9 alphanumerics, consistent in calls and results (the fake rejects others)
        assert all(len(i) == 9 and i.isalnum() for i, _ in wire["calls"])
    elif name != "gemini":
        assert [i for i, _ in wire["calls"]] == ["call_Wq3kX9vB2nL5", "call_Pz8mR1tY6uE4"]
    # no content lost: every text of the conversation arrives, in order
    expected = [
        "Weather in Oslo?",
        "Cold.",
        "Plan my day in Paris.",
        "And Rome, please.",
        "Checking both.",
        "Paris is sunny; it is 14:05 in Rome.",
        "So, umbrella or not?",
    ]
    joined = "\n".join(wire["texts"])
    positions = [joined.find(t) for t in expected]
    assert -1 not in positions and positions == sorted(positions), joined
    # strict alternation where the provider requires it
    if name in ("anthropic", "bedrock", "mistral", "gemini"):
        turns = [r for r in wire["roles"] if r != "system" and r != "tool"]
        assert turns[0] == "user"
    if name in ("anthropic", "bedrock"):
        assert all(a != b for a, b in itertools.pairwise(wire["roles"]))
    if name == "mistral":
        roles = wire["roles"]
        assert all(a != b or a == "tool" for a, b in itertools.pairwise(roles)), roles


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "gemini"])
def test_a_conversation_starting_with_the_assistant_gets_a_user_turn_first(name: str) -> None:
    messages = [
        {"role": "system", "content": "Be kind."},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Hi."},
    ]
    fake, _, _ = _send(name, messages, Layout(1, ((1,),)), Reply("Hi!"))
    wire = READERS[name](fake.last_request.json)
    assert wire["roles"][0] == "user" and wire["texts"][0] == CONVERSATION_START
    assert wire["texts"][1:] == ["Hello! How can I help?", "Hi."]


def test_normalise_leaves_an_already_valid_request_alone() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q2"},
    ]
    for provider in (None, "openai", "anthropic", "gemini", "mistral", "bedrock", "cohere"):
        assert normalise(messages, provider) == messages


# -- prompt caching ---------------------------------------------------------------------------
def _cached_prefix_conversation() -> tuple[list[dict[str, Any]], Layout]:
    rules = "Follow the house style. " * 300  # long enough for the provider to cache
    messages = [
        {"role": "system", "content": rules},
        {"role": "user", "content": "demo question"},
        {"role": "assistant", "content": "demo answer"},
        {"role": "user", "content": "the question"},
    ]
    return messages, Layout(3, ())


def test_anthropic_gets_cache_control_on_the_last_prefix_block_only_with_prompt_cache() -> None:
    messages, layout = _cached_prefix_conversation()
    fake, _, _ = _send("anthropic", messages, layout, Reply("ok"), prompt_cache=True)
    body = fake.last_request.json
    marked = [
        (i, b["text"]) for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b
    ]
    assert marked == [(1, "demo answer")]  # the last demo: system + demos cached as one prefix
    assert all("cache_control" not in b for b in body["system"])
    assert body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    fake, _, _ = _send("anthropic", messages, layout, Reply("ok"))
    assert "cache_control" not in json.dumps(fake.last_request.json)


def test_bedrock_gets_a_cache_point_after_the_prefix() -> None:
    messages, layout = _cached_prefix_conversation()
    fake, _, _ = _send("bedrock", messages, layout, Reply("ok"), prompt_cache=True)
    body = fake.last_request.json
    assert body["messages"][1]["role"] == "assistant"
    assert body["messages"][1]["content"] == [{"text": "demo answer"}, {"cachePoint": {"type": "default"}}]
    assert sum("cachePoint" in b for m in body["messages"] for b in m["content"]) == 1


@pytest.mark.parametrize("name", ["openai", "gemini", "mistral", "cohere"])
def test_providers_that_cache_automatically_get_no_markers(name: str) -> None:
    messages, layout = _cached_prefix_conversation()
    fake, _, _ = _send(name, messages, layout, Reply("ok"), prompt_cache=True)
    assert "cache_control" not in json.dumps(fake.last_request.json)
    assert "cachePoint" not in json.dumps(fake.last_request.json)


@pytest.mark.parametrize("name", ["anthropic", "bedrock"])
def test_cached_tokens_are_counted_in_usage_and_history(name: str) -> None:
    messages, layout = _cached_prefix_conversation()
    billing = PromptCacheBilling("ok")
    fake_cls, model = MODELS[name]
    with fake_cls(responder=billing) as fake:
        lm = _lm(fake, model)
        first = send(lm, messages, {"prompt_cache": True}, layout=layout)[0]
        second = send(
            lm,
            [*messages[:-1], {"role": "user", "content": "another"}],
            {"prompt_cache": True},
            layout=layout,
        )[0]
    fake.check()
    assert billing.write_tokens > 1024 and billing.read_tokens == billing.write_tokens
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == billing.read_tokens
    assert second.usage.prompt_tokens > second.usage.cached_tokens > 0
    assert [e.usage.cached_tokens for e in lm.history] == [0, billing.read_tokens]
    assert lm.usage.cached_tokens == billing.read_tokens


def test_prompt_cache_set_on_the_lm_marks_requests() -> None:
    messages, layout = _cached_prefix_conversation()
    with AnthropicFake(Reply("ok")) as fake:
        lm = _lm(fake, "claude-sonnet-4-5")
        lm.prompt_cache = True  # what LM(..., prompt_cache=True) sets
        send(lm, messages, {}, layout=layout)
    assert "cache_control" in json.dumps(fake.last_request.json["messages"][1])
