"""LM calls through both routes (openai-SDK fast path and litellm) against a loopback server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import (
    FakeOpenAIServer,
    Reply,
    completion_body,
    stream_chunks,
)

import sigform as sf
from sigform.lm import LM, StreamDelta
from sigform.lm.interface import Completion, LMProtocol, ToolCall


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


@pytest.fixture
def fake(lm_server: FakeOpenAIServer) -> FakeOpenAIServer:
    return lm_server


MSG = [{"role": "user", "content": "hi"}]


def make_lm(fake: FakeOpenAIServer, fast: bool, **kw: Any) -> LM:
    kw.setdefault("cache", False)
    return LM("openai/fake", api_base=fake.api_base, api_key="sk-test-key-0123456789", fast_path=fast, **kw)


def test_lm_implements_protocol(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake, True)
    assert isinstance(lm, LMProtocol)
    assert sf.LM is LM


def test_call_returns_normalised_completion(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    [c] = lm(MSG)
    assert isinstance(c, Completion)
    assert c.text == "echo: hi"
    assert c.finish_reason == "stop"
    assert c.provider == "openai"
    assert c.model == "fake"
    assert c.usage.prompt_tokens == 11 and c.usage.completion_tokens == 7
    assert c.usage.reasoning_tokens == 3 and c.usage.cached_tokens == 2
    assert c.usage.cache_hit is False
    # the server saw the bare model name and our messages, nothing added
    assert fake.requests[-1] == {"model": "fake", "messages": MSG}
    assert fake.headers[-1]["authorization"] == "Bearer sk-test-key-0123456789"


def test_async_call_matches_sync(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    sync = lm(MSG, temperature=0.3)
    result = asyncio.run(lm.acall(MSG, temperature=0.3))
    assert result == sync
    assert fake.requests[0] == fake.requests[1]


def test_parameters_are_sent_unchanged(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path, temperature=0.7)
    lm(MSG, max_tokens=33, stop=["END"], seed=5, top_p=0.9)
    body = fake.requests[-1]
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 33 and body["stop"] == ["END"] and body["seed"] == 5 and body["top_p"] == 0.9


def test_no_hidden_parameters(fake: FakeOpenAIServer, fast_path: bool) -> None:
    make_lm(fake, fast_path)(MSG, n=1)
    assert set(fake.requests[-1]) == {"model", "messages"}


def test_n_is_one_request_when_supported(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    out = lm(MSG, n=3, temperature=1.0)
    assert len(out) == 3 and all(c.text == "echo: hi" for c in out)
    assert len(fake.requests) == 1 and fake.requests[0]["n"] == 3
    assert fake.requests[0]["temperature"] == 1.0


def test_n_tops_up_when_server_ignores_it(fake: FakeOpenAIServer, fast_path: bool) -> None:
    counter = iter(range(100))
    fake.reply = lambda body, headers: Reply(body=completion_body([f"answer {next(counter)}"]))
    lm = make_lm(fake, fast_path)
    out = lm(MSG, n=3)
    assert sorted(c.text for c in out) == ["answer 0", "answer 1", "answer 2"]
    assert len(fake.requests) == 3
    # the extra requests are single-candidate copies of the same request
    assert [r.get("n") for r in fake.requests[1:]] == [None, None]
    # usage covers all three requests
    assert out[0].usage.prompt_tokens == 33
    out = asyncio.run(lm.acall(MSG, n=2))
    assert len(out) == 2 and len(fake.requests) == 5


def test_reasoning_tool_calls_and_logprobs(fake: FakeOpenAIServer, fast_path: bool) -> None:
    logprobs = {"content": [{"token": "x", "logprob": -0.1, "bytes": [120], "top_logprobs": []}]}
    fake.queue.append(
        Reply(
            body=completion_body(
                ["x"],
                reasoning="because",
                finish_reason="tool_calls",
                logprobs=logprobs,
                tool_calls=[
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
                    {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{not json"}},
                ],
            )
        )
    )
    [c] = make_lm(fake, fast_path)(MSG, logprobs=True, top_logprobs=1)
    assert c.reasoning == "because"
    assert c.tool_calls == (ToolCall("f", {"a": 1}, "c1"), ToolCall("g", "{not json", "c2"))
    assert c.finish_reason == "tool_calls"
    assert c.logprobs["content"][0]["token"] == "x"


def test_truncated_completion(fake: FakeOpenAIServer, fast_path: bool) -> None:
    fake.queue.append(Reply(body=completion_body(["partial"], finish_reason="length")))
    [c] = make_lm(fake, fast_path)(MSG)
    assert c.truncated and c.text == "partial"


def test_string_prompt_and_bad_messages(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake, True)
    assert lm("hello")[0].text == "echo: hello"
    with pytest.raises(TypeError, match="messages"):
        lm([{"content": "no role"}])
    assert len(fake.requests) == 1


def test_dotted_names_become_nested_fields(fake: FakeOpenAIServer, fast_path: bool) -> None:
    make_lm(fake, fast_path)(MSG, **{"reasoning.effort": "low", "reasoning.summary": "auto"})
    assert fake.requests[-1]["reasoning"] == {"effort": "low", "summary": "auto"}


def test_response_format_pydantic_model(fake: FakeOpenAIServer, fast_path: bool) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: str

    make_lm(fake, fast_path)(MSG, response_format=Answer)
    fmt = fake.requests[-1]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Answer"
    assert fmt["json_schema"]["schema"]["properties"]["answer"]["type"] == "string"


def test_headers_reach_the_server(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path, headers={"X-Team": "a"})
    lm(MSG, headers={"X-Call": "b"})
    assert fake.headers[-1]["x-team"] == "a" and fake.headers[-1]["x-call"] == "b"


def test_the_fast_paths_sync_and_async_routes_send_the_same_request(fake: FakeOpenAIServer) -> None:
    # sync requests go over httpx, async ones over aiohttp: the server sees one request
    lm = make_lm(fake, True, headers={"X-Team": "a"}, project="proj-1")
    assert lm(MSG, headers={"X-Call": "b"}, temperature=0.5)[0].text == "echo: hi"
    assert asyncio.run(lm.acall(MSG, headers={"X-Call": "b"}, temperature=0.5))[0].text == "echo: hi"
    (sync_body, sync_headers), (async_body, async_headers) = zip(fake.requests, fake.headers, strict=True)
    assert sync_body == async_body == {"model": "fake", "messages": MSG, "temperature": 0.5}
    same = ("authorization", "content-type", "accept", "user-agent", "x-team", "x-call", "openai-project")
    assert {k: sync_headers[k] for k in same} == {k: async_headers[k] for k in same}
    assert sync_headers["authorization"] == "Bearer sk-test-key-0123456789"
    assert sync_headers["x-team"] == "a" and sync_headers["x-call"] == "b"
    assert sync_headers["openai-project"] == "proj-1"


def test_stream_yields_deltas_then_completions(fake: FakeOpenAIServer, fast_path: bool) -> None:
    fake.queue.append(
        Reply(chunks=stream_chunks("hello world", reasoning="think", tool_call={
            "id": "c1", "name": "f", "arguments": {"a": [1, 2]}}))
    )
    items = list(make_lm(fake, fast_path).stream(MSG))
    *deltas, final = items
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert "".join(d.text for d in deltas if d.kind == "text") == "hello world"
    assert "".join(d.text for d in deltas if d.kind == "reasoning") == "think"
    tool = [d for d in deltas if d.kind == "tool_call"]
    assert tool[0].tool_name == "f" and tool[0].tool_id == "c1"
    assert json.loads("".join(d.text for d in tool)) == {"a": [1, 2]}
    [c] = final
    assert c.text == "hello world" and c.reasoning == "think"
    assert c.tool_calls == (ToolCall("f", {"a": [1, 2]}, "c1"),)
    assert c.finish_reason == "tool_calls"
    assert c.usage.prompt_tokens == 5 and c.usage.completion_tokens == 4
    assert fake.requests[-1]["stream"] is True


def test_astream_matches_stream(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    sync_items = list(lm.stream(MSG))

    async def collect() -> list[Any]:
        return [item async for item in lm.astream(MSG)]

    async_items = asyncio.run(collect())
    assert async_items == sync_items
    assert async_items[-1][0].text == "echo: hi"


def test_stream_and_call_agree(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    streamed = list(lm.stream(MSG))[-1]
    called = lm(MSG)
    assert [c.text for c in streamed] == [c.text for c in called]
    assert [c.finish_reason for c in streamed] == [c.finish_reason for c in called]


def test_both_routes_agree(fake: FakeOpenAIServer) -> None:
    body = completion_body(["same"], reasoning="r", tool_calls=[
        {"id": "c9", "type": "function", "function": {"name": "t", "arguments": '{"q": "x"}'}}])
    fake.reply = lambda b, h: Reply(body=body)
    fast = make_lm(fake, True)(MSG, temperature=0)
    slow = make_lm(fake, False)(MSG, temperature=0)
    assert fast == slow
    assert fake.requests[0] == fake.requests[1]


def test_fast_path_does_not_import_litellm(fake: FakeOpenAIServer) -> None:
    code = (
        "import sys, sigform\n"
        "assert 'litellm' not in sys.modules\n"
        f"lm = sigform.LM('openai/fake', api_base={fake.api_base!r}, cache=False)\n"
        "print(lm('ping')[0].text)\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == ["echo: ping", "False"]


def test_route_choice(fake: FakeOpenAIServer) -> None:
    assert make_lm(fake, None)._resolve().fast  # openai/... with api_base: automatic fast path
    assert not make_lm(fake, False)._resolve().fast
    assert LM("hosted_vllm/m", api_base=fake.api_base)._resolve().fast
    with pytest.raises(ValueError, match="OpenAI-compatible"):
        LM("anthropic/claude-x", fast_path=True)._resolve()


def test_apis_other_than_chat_completions_stay_on_litellm(fake: FakeOpenAIServer) -> None:
    # the fast path speaks chat completions only: litellm's Responses route (explicit or for
    # models OpenAI serves only there) and non-chat models must not take it automatically
    for model in ("openai/responses/gpt-5", "openai/o3-pro", "openai/whisper-1"):
        lm = LM(model, api_base=fake.api_base)
        assert not lm._resolve().fast, model
    assert LM("openai/gpt-4o", api_base=fake.api_base)._resolve().fast
    assert LM("openai/meta-llama/Llama-3.1-8B", api_base=fake.api_base)._resolve().fast  # unknown: a server's
    with pytest.raises(ValueError, match="chat completions only"):
        LM("openai/responses/gpt-5", api_base=fake.api_base, fast_path=True)._resolve()


def test_local_model_is_resolved_lazily(fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import sigform.local

    calls: list[int] = []

    def ensure_server() -> str:
        calls.append(1)
        return fake.api_base

    monkeypatch.setattr(sigform.local, "ensure_server", ensure_server)
    lm = LM("local", cache=False)
    assert calls == []  # nothing started at construction
    assert lm("hi")[0].text == "echo: hi"
    lm("again")
    assert calls == [1, 1]  # checked before every request, so a dead server is replaced
    assert fake.requests[0]["model"] == sigform.local.MODEL_NAME
    assert lm.supports("json_object") and not lm.supports("tools")


def test_default_lm_without_model(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LM().model == "local"
    configured = LM("openai/gpt-4o-mini", api_key="env:SOME_KEY")
    with sf.context(lm=configured):
        inherited = LM()
    assert inherited.model == "openai/gpt-4o-mini"
    assert "env:SOME_KEY" in repr(inherited)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)


def test_unconfigured_lm_says_once_that_it_uses_the_local_model() -> None:
    out = _run_python("import sigform\nsigform.LM()\nsigform.LM()\nsigform.LM(None)\nprint('ok')")
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "embedded local model" in lines[0] and "sigform.configure" in lines[0]
    assert out.stdout.strip() == "ok"
    # asked for by name, or configured: no notice
    quiet = _run_python(
        "import sigform\nsigform.LM('local')\n"
        "with sigform.context(lm=sigform.LM('openai/gpt-4o-mini')):\n    sigform.LM()\n"
    )
    assert "local model" not in quiet.stderr
    # an application that logs gets it as a log record instead
    logged = _run_python(
        "import logging, sys, sigform\n"
        "logging.basicConfig(stream=sys.stdout, format='%(name)s|%(message)s')\n"
        "sigform.LM()\nsigform.LM()\n"
    )
    assert [line.split("|")[0] for line in logged.stdout.splitlines()] == ["sigform.lm"]
    assert "local model" not in logged.stderr


def test_unknown_servers_are_asked_for_structured_outputs_until_they_refuse(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake, None)
    assert lm.supports("stop")
    assert lm.supports("json_schema") and lm.supports("json_object")  # tried first, stepped down on rejection
    assert not lm.supports("tools") and not lm.supports("nonsense")
    lm2 = make_lm(fake, None, capabilities={"json_schema": True})
    assert lm2.supports("json_schema")


def test_supports_uses_litellm_knowledge() -> None:
    lm = LM("openai/gpt-4o-mini")
    assert lm.supports("json_schema") and lm.supports("tools") and lm.supports("stop")
    assert not lm.supports("reasoning")
    assert LM("openai/o3-mini").supports("reasoning")
    assert not lm.supports("unknown-feature")


def test_structured_output_step_down_is_remembered_per_model_and_endpoint(fake: FakeOpenAIServer) -> None:
    # one server behind two addresses, both claiming json_schema support: a step-down learnt at
    # one endpoint must not change what is asked of the other
    from sigform.adapters.json_adapter import forget_step_downs

    def reply(body: dict[str, Any], headers: Any) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return fake.error(400, "response_format json_schema is not supported")
        return Reply(body=completion_body(['{"y": 4}']))

    fake.reply = reply
    forget_step_downs()
    try:
        one = LM("openai/m", api_base=fake.api_base, cache=False, capabilities={"json_schema": True})
        other_base = fake.api_base.replace("127.0.0.1", "localhost")
        other = LM("openai/m", api_base=other_base, cache=False, capabilities={"json_schema": True})
        square = sf.Predict("x: int -> y: int", adapter=sf.JSONAdapter())
        assert square(x=2, lm=one).y == 4
        assert square(x=2, lm=one).y == 4  # remembered: straight to json_object
        assert square(x=2, lm=other).y == 4  # not remembered for another endpoint
        types = [r.get("response_format", {}).get("type") for r in fake.requests]
        assert types == ["json_schema", "json_object", "json_object", "json_schema", "json_object"]
    finally:
        forget_step_downs()
