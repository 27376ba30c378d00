"""Streams asked for ``n`` candidates: missing ones are topped up, on providers without ``n``
too, and a failed top-up fails the stream and is recorded."""

from __future__ import annotations

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform.lm import LM

# every test here gets its own cache directory (a cached answer would hide the request)
pytestmark = pytest.mark.usefixtures("isolated_cache")


MSG = [{"role": "user", "content": "hi"}]


def _numbered(server: FakeOpenAIServer) -> None:
    from lm_fake_openai import Reply, completion_body, stream_chunks

    counter = iter(range(100))

    def reply(body: dict, headers: dict) -> Reply:
        text = f"answer {next(counter)}"
        if body.get("stream"):  # one streamed choice, whatever n asked (as many servers do)
            return Reply(chunks=stream_chunks(text))
        return Reply(body=completion_body([text]))

    server.reply = reply


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_with_n_tops_up_missing_candidates(
    lm_server: FakeOpenAIServer, fast_path: bool, mode: str
) -> None:
    import asyncio

    from sigform.lm import StreamDelta

    _numbered(lm_server)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path)
    if mode == "sync":
        items = list(lm.stream(MSG, n=3))
    else:

        async def collect() -> list[object]:
            return [item async for item in lm.astream(MSG, n=3)]

        items = asyncio.run(collect())
    *deltas, final = items
    assert len(final) == 3 and final[0].text == "answer 0"
    assert sorted(c.text for c in final[1:]) == ["answer 1", "answer 2"]  # concurrent: any order
    # candidate 0 streamed live; the topped-up ones are reported whole, with their own index
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert "".join(d.text for d in deltas if d.index == 0) == "answer 0"
    assert {d.index for d in deltas} == {0, 1, 2}
    assert [d.text for d in deltas if d.index > 0] == [c.text for c in final[1:]]
    assert lm_server.requests[0]["stream"] is True and lm_server.requests[0]["n"] == 3
    assert [r.get("n") for r in lm_server.requests[1:]] == [None, None]
    assert not any(r.get("stream") for r in lm_server.requests[1:])
    # usage covers the stream and both extra requests
    assert final[0].usage.prompt_tokens == 5 + 11 + 11 and final[2].usage == final[0].usage
    # the whole answer is cached as one: a repeat is a hit with all three candidates
    again = list(lm.stream(MSG, n=3))[-1]
    assert [c.text for c in again] == [c.text for c in final] and len(lm_server.requests) == 3


def test_a_stream_with_n_on_a_provider_without_n_streams_one_and_tops_up(lm_server: FakeOpenAIServer) -> None:
    from dataclasses import replace

    _numbered(lm_server)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, cache=False)
    lm._route = replace(lm._resolve(), supports_n=False)  # a provider that does not take n
    final = list(lm.stream(MSG, n=2))[-1]
    assert len(final) == 2 and final[0].text == "answer 0" and final[1].text == "answer 1"
    assert "n" not in lm_server.requests[0]  # never sent where it is not supported
    assert len(lm_server.requests) == 2


def test_a_failed_top_up_fails_the_stream_and_is_recorded(lm_server: FakeOpenAIServer) -> None:
    from lm_fake_openai import Reply, stream_chunks

    def reply(body: dict, headers: dict) -> Reply:
        if body.get("stream"):
            return Reply(chunks=stream_chunks("streamed"))
        return lm_server.error(400, "n is not supported here")

    lm_server.reply = reply
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, num_retries=0)
    with pytest.raises(sf.BadRequestError, match="not supported"):
        list(lm.stream(MSG, n=2))
    assert lm.history[-1].error and lm.stats["errors"] == 1
    _numbered(lm_server)
    before = len(lm_server.requests)
    assert len(list(lm.stream(MSG, n=2))[-1]) == 2  # nothing half-done was cached: asked again
    assert len(lm_server.requests) == before + 2
