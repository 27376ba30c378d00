"""``LM()`` without a model is a faithful copy of the configured LM: connection settings,
request defaults, headers, retries, cache and route; explicit arguments win."""

from __future__ import annotations

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform.lm import LM

# every test here gets its own cache directory (a cached answer would hide the request)
pytestmark = pytest.mark.usefixtures("isolated_cache")


SECRET = "sk-review-secret-0123456789abcdef"


MSG = [{"role": "user", "content": "hi"}]


def test_lm_without_a_model_copies_the_configured_lm_whole(lm_server: FakeOpenAIServer) -> None:
    # only the model, api_base and api_key were taken: connection settings, request defaults,
    # headers, timeout, retries, cache and route choice were silently dropped
    configured = LM(
        "openai/fake", api_base=lm_server.api_base, api_key=SECRET, organization="org-review",
        temperature=0.2, timeout=7.0, num_retries=1, headers={"X-Team": "qa"}, cache=False,
        fast_path=True, retry_delay=0.1, capabilities={"tools": True},
    )
    with sf.context(lm=configured):
        lm = LM()
        tuned = LM(temperature=0.9, cache=True, num_retries=3, timeout=None)
    assert lm is not configured and lm.model == "openai/fake" and lm.api_base == lm_server.api_base
    assert lm.kwargs == {"temperature": 0.2} and lm.timeout == 7.0 and lm.num_retries == 1
    assert lm.headers == {"X-Team": "qa"} and lm.cache is False and lm.fast_path is True
    assert lm.retry_delay == 0.1 and lm.supports("tools")
    assert repr(lm) == repr(configured) and SECRET not in repr(lm)
    lm(MSG)
    sent = lm_server.headers[-1]
    assert sent["authorization"] == f"Bearer {SECRET}" and sent["openai-organization"] == "org-review"
    assert sent["x-team"] == "qa" and lm_server.requests[-1]["temperature"] == 0.2
    # explicit arguments win, even when they equal the constructor's defaults
    assert tuned.kwargs == {"temperature": 0.9} and tuned.cache is True
    assert tuned.num_retries == 3 and tuned.timeout is None
    assert tuned.headers == {"X-Team": "qa"} and tuned.fast_path is True
    # its own history and usage, not the configured LM's
    assert len(lm.history) == 1 and len(configured.history) == 0
