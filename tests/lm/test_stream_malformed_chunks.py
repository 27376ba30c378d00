"""A streamed chunk that is not a chat-completion chunk (issue 13) is an ``sf.ProviderError`` naming
what was seen, with the chunk's text kept, on both routes -- never a raw JSONDecodeError,
AttributeError or ValueError, and never "could not reach the provider" for a server that answered.
Before the first piece it is retried like a 5xx; after pieces were yielded it is not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.lm import LM
from sigform.testing.providers import LoopbackServer, RecordedRequest, Response

MSG = [{"role": "user", "content": "hi"}]


def chunk(text: str, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
    return {**head, "choices": [choice], **extra}


def shaped(**fields: Any) -> str:
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "fake", **fields})


# case -> (the event's data, what the error must name, whether the litellm route can keep the text)
BAD = {
    "html": ("<html>Gateway says hello</html>", "not JSON", True),
    "a list": ('["oops"]', "not a chat-completion chunk", False),
    "choices a string": (shaped(choices="none"), "not a chat-completion chunk", False),
    "a choice a string": (shaped(choices=["x"]), "not a chat-completion chunk", False),
    "delta a string": (shaped(choices=[{"index": 0, "delta": "text"}]), "not a chat-completion chunk", False),
    "index a word": (shaped(choices=[{"index": "a", "delta": {"content": "x"}}]), "index is 'a'", True),
    "tool_calls a string": (shaped(choices=[{"index": 0, "delta": {"tool_calls": "x"}}]), "tool_calls", True),
    "usage in words": (
        shaped(choices=[], usage={"prompt_tokens": "many", "completion_tokens": 1, "total_tokens": 1}),
        "not a chat-completion chunk",
        False,
    ),
}


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def events(*datas: Any) -> list[bytes]:
    out = [f"data: {d if isinstance(d, str) else json.dumps(d)}\n\n".encode() for d in datas]
    return [*out, b"data: [DONE]\n\n"]


class Streams(LoopbackServer):
    """Answers each request with the next scripted list of SSE events, then good streams."""

    def __init__(self, *scripts: list[bytes]) -> None:
        super().__init__()
        self.scripts = list(scripts)

    async def handle(self, request: RecordedRequest) -> Response:
        script = self.scripts.pop(0) if self.scripts else events(chunk("fine"), chunk("", "stop"))
        return Response(200, [("content-type", "text/event-stream")], stream=script)


def make_lm(server: Streams, fast_path: bool, retries: int) -> LM:
    return LM(
        "openai/fake", api_base=f"{server.base_url}/v1", api_key="sk-k", fast_path=fast_path,
        num_retries=retries, retry_delay=0, cache=False,
    )


def streamed_text(lm: LM) -> str:
    *_, final = lm.stream(MSG)
    return final[0].text


@pytest.mark.parametrize("case", list(BAD))
def test_a_malformed_chunk_is_a_provider_error_naming_it(case: str, fast_path: bool) -> None:
    data, named, litellm_keeps_text = BAD[case]
    script = events(data, chunk("Hel"), chunk("lo", "stop"))
    with Streams(script) as server, pytest.raises(sf.ProviderError) as info:
        streamed_text(make_lm(server, fast_path, retries=0))
    err = info.value
    assert "malformed response" in str(err) and err.retryable
    if fast_path:
        assert named in str(err) and err.provider_message == data  # the chunk as sent
    elif litellm_keeps_text:  # the chunk as litellm read it
        assert named in str(err) and (data in err.provider_message or _bad_part(data) in err.provider_message)
    else:  # litellm keeps neither the chunk nor its text: only the value its own read failed on
        assert "litellm could not read it" in str(err) and "only the value it failed on" in str(err)
        assert err.provider_message == LITELLM_FAILED_ON[case]


# what litellm's exception still names of a chunk it parsed but could not read (issue 13
# follow-up: the provider_message held litellm's own message only): the value an attribute was
# looked up on (AttributeError.obj) or a validation's input -- for "choices": "none", litellm
# read choices[0], the string "n"
LITELLM_FAILED_ON = {
    "a list": '["oops"]',
    "choices a string": '"n"',
    "a choice a string": '"x"',
    "delta a string": '"text"',
    "usage in words": '"many"',
}


def _bad_part(data: str) -> str:
    delta = json.loads(data)["choices"][0]
    return '"index": "a"' if delta["index"] == "a" else '"tool_calls": "x"'


@pytest.mark.parametrize("case", ["html", "a list", "index a word"])
def test_a_malformed_chunk_before_any_piece_is_retried(case: str, fast_path: bool) -> None:
    data = BAD[case][0]
    with Streams(events(data), events(data)) as server:
        lm = make_lm(server, fast_path, retries=2)
        assert streamed_text(lm) == "fine"
        assert len(server.requests) == 3
        server.scripts = [events(data)]

        async def collect() -> str:
            final: Any = None
            async for item in lm.astream(MSG):
                final = item
            return final[0].text

        assert asyncio.run(collect()) == "fine"
        assert len(server.requests) == 5


def test_a_malformed_chunk_after_pieces_is_not_retried(fast_path: bool) -> None:
    with Streams(events(chunk("Hel"), '["oops"]', chunk("lo", "stop"))) as server:
        lm = make_lm(server, fast_path, retries=3)
        seen: list[Any] = []
        with pytest.raises(sf.ProviderError):
            for item in lm.stream(MSG):
                seen.append(item)
        assert [d.text for d in seen] == ["Hel"] and len(server.requests) == 1


def test_an_error_event_mid_stream_is_the_providers_message_not_a_connection_failure(fast_path: bool) -> None:
    error = {"error": {"message": "the model is overloaded", "type": "server_error"}}
    with Streams(events(chunk("Hel"), error)) as server, pytest.raises(sf.ProviderError) as info:
        streamed_text(make_lm(server, fast_path, retries=0))
    assert "the model is overloaded" in str(info.value) and "could not reach" not in str(info.value)


def test_the_value_litellm_failed_on_is_kept_without_the_credential() -> None:
    key = "sk-live-0123456789abcdef"
    with Streams(events(json.dumps(["echo", key]), chunk("x", "stop"))) as server:
        lm = LM(
            "openai/fake", api_base=f"{server.base_url}/v1", api_key=key, fast_path=False,
            num_retries=0, cache=False,
        )
        with pytest.raises(sf.ProviderError) as info:
            streamed_text(lm)
    err = info.value
    assert '"echo"' in err.provider_message and "only the value it failed on" in str(err)
    assert key not in err.provider_message and key not in str(err) and key not in repr(err)
