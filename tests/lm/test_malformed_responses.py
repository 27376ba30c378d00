"""A 200 response that is not a chat completion (issue 13 item 7) is an ``sf.ProviderError``,
retried like a 5xx, on both routes -- never a raw JSONDecodeError/AttributeError/ValueError."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lm_fake_openai import completion_body

import sigform as sf
from sigform.lm import LM
from sigform.testing.providers import LoopbackServer, RecordedRequest, Response

MSG = [{"role": "user", "content": "hi"}]
GOOD = completion_body(["fine"])
MALFORMED = {
    "html": (b"<html><body>Gateway says hello</body></html>", "text/html"),
    "empty list": (b"[]", "application/json"),
    "list of text": (b'["oops"]', "application/json"),
    "empty body": (b"", "application/json"),
    "token count as words": (
        json.dumps({**GOOD, "usage": {"prompt_tokens": "many", "completion_tokens": 1}}).encode(),
        "application/json",
    ),
    "choices not a list": (json.dumps({**GOOD, "choices": "none"}).encode(), "application/json"),
    "choice not an object": (json.dumps({**GOOD, "choices": ["x"]}).encode(), "application/json"),
    # read as its Python repr, "{'answer': 4}", which the adapters then parsed as an answer
    "content an object": (
        json.dumps({**GOOD, "choices": [{"index": 0, "message": {"content": {"answer": 4}}}]}).encode(),
        "application/json",
    ),
    "text an object": (
        json.dumps({**GOOD, "choices": [{"index": 0, "text": {"answer": 4}}]}).encode(), "application/json"
    ),
}


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


class Scripted(LoopbackServer):
    """Serves the given raw bodies in order with status 200, then good completions."""

    def __init__(self, *bodies: tuple[bytes, str]) -> None:
        super().__init__()
        self.bodies = list(bodies)

    async def handle(self, request: RecordedRequest) -> Response:
        if self.bodies:
            body, kind = self.bodies.pop(0)
            return Response(200, [("content-type", kind)], body)
        return Response.json(GOOD)


def make_lm(server: Scripted, fast_path: bool, retries: int) -> LM:
    return LM(
        "openai/fake",
        api_base=f"{server.base_url}/v1",
        api_key="sk-k",
        fast_path=fast_path,
        num_retries=retries,
        retry_delay=0,
        cache=False,
    )


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_200_is_a_provider_error(case: str, fast_path: bool) -> None:
    with Scripted(MALFORMED[case]) as server:
        with pytest.raises(sf.ProviderError) as info:
            make_lm(server, fast_path, retries=0)(MSG)
        assert info.value.retryable


@pytest.mark.parametrize("case", ["html", "list of text", "token count as words"])
def test_a_malformed_200_is_retried(case: str, fast_path: bool) -> None:
    with Scripted(MALFORMED[case], MALFORMED[case]) as server:
        lm = make_lm(server, fast_path, retries=2)
        assert lm(MSG)[0].text == "fine"
        assert len(server.requests) == 3
        server.bodies = [MALFORMED[case]]
        assert asyncio.run(lm.acall(MSG))[0].text == "fine"
        assert len(server.requests) == 5
