"""Error mapping and retries: what is retried, how long we wait, what users see."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body

import sigform as sf
from sigform.lm import LM, RetryPolicy
from sigform.lm.errors_map import map_exception, parse_retry_after

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def lm_for(server: FakeOpenAIServer, fast: bool, **kw: object) -> LM:
    kw.setdefault("retry_delay", 0.001)
    return LM("openai/fake", api_base=server.api_base, api_key="sk-k", fast_path=fast, cache=False, **kw)


def ok() -> Reply:
    return Reply(body=completion_body(["fine"]))


def test_rate_limit_is_retried_honouring_retry_after(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_server.queue.extend([
        lm_server.error(429, "slow down", headers={"retry-after": "0"}),
        lm_server.error(429, "slow down", headers={"retry-after-ms": "1"}),
        ok(),
    ])
    assert lm_for(lm_server, fast_path)(MSG)[0].text == "fine"
    assert len(lm_server.requests) == 3


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
def test_server_errors_are_retried(lm_server: FakeOpenAIServer, fast_path: bool, status: int) -> None:
    lm_server.queue.extend([lm_server.error(status, "oops"), ok()])
    assert lm_for(lm_server, fast_path)(MSG)[0].text == "fine"
    assert len(lm_server.requests) == 2


def test_retries_are_bounded(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_server.reply = lambda b, h: lm_server.error(503, "down for maintenance")
    lm = lm_for(lm_server, fast_path, num_retries=2)
    with pytest.raises(sf.ProviderError) as info:
        lm(MSG)
    assert len(lm_server.requests) == 3
    assert "down for maintenance" in str(info.value) and info.value.status_code == 503
    assert info.value.provider_message is not None and "down for maintenance" in info.value.provider_message
    with pytest.raises(sf.ProviderError):
        lm(MSG, num_retries=0)
    assert len(lm_server.requests) == 4


@pytest.mark.parametrize(
    ("status", "message", "code", "error_type"),
    [
        (401, "Invalid token", "invalid_api_key", sf.AuthenticationError),
        (403, "Forbidden model", None, sf.AuthenticationError),
        (400, "Unsupported value: response_format", None, sf.BadRequestError),
        (404, "The model `fake` does not exist", "model_not_found", sf.BadRequestError),
        (422, "Unprocessable", None, sf.BadRequestError),
        (400, "This model's maximum context length is 8192 tokens", "context_length_exceeded",
         sf.ContextWindowError),
    ],
)
def test_non_retryable_errors_fail_at_once(lm_server: FakeOpenAIServer, fast_path: bool, status: int,
                                           message: str, code: str | None, error_type: type) -> None:
    lm_server.queue.extend([lm_server.error(status, message, code=code), ok()])
    with pytest.raises(error_type) as info:
        lm_for(lm_server, fast_path)(MSG)
    assert len(lm_server.requests) == 1
    err = info.value
    assert isinstance(err, sf.LMError) and not err.retryable
    assert message in str(err) and message in (err.provider_message or "")
    assert err.model == "openai/fake"


# what llama.cpp's server (FastAPI + pydantic) answers to response_format={"type": "json_schema"}
LLAMA_CPP_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": LLAMA_CPP_500, "type": "internal_server_error", "param": None, "code": None}},
        {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required", "input": {}}]},
    ],
    ids=["llama-cpp-text", "fastapi-detail"],
)
def test_request_validation_errors_are_bad_requests_whatever_the_status(
    lm_server: FakeOpenAIServer, fast_path: bool, body: dict[str, object]
) -> None:
    # a bad request reported as HTTP 500: retrying with backoff would only repeat it
    lm_server.queue.extend([Reply(status=500, body=body), ok()])
    with pytest.raises(sf.BadRequestError) as info:
        lm_for(lm_server, fast_path)(MSG)
    assert len(lm_server.requests) == 1
    assert info.value.status_code == 500 and not info.value.retryable
    assert "rejected the request's parameters" in str(info.value)


def test_a_server_failure_that_mentions_validation_is_still_retried(
    lm_server: FakeOpenAIServer, fast_path: bool
) -> None:
    # no request location named: the server's own failure, retryable as any 5xx
    lm_server.queue.extend([lm_server.error(500, "schema validation error in the model's output"), ok()])
    assert lm_for(lm_server, fast_path)(MSG)[0].text == "fine"
    assert len(lm_server.requests) == 2


def test_async_retries(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_server.queue.extend([lm_server.error(500, "oops"), lm_server.error(429, "wait"), ok()])
    result = asyncio.run(lm_for(lm_server, fast_path).acall(MSG))
    assert result[0].text == "fine" and len(lm_server.requests) == 3
    lm_server.queue.append(lm_server.error(400, "bad"))
    with pytest.raises(sf.BadRequestError):
        asyncio.run(lm_for(lm_server, fast_path).acall(MSG))


def test_stream_retries_before_the_first_piece(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_server.queue.append(lm_server.error(503, "busy"))
    items = list(lm_for(lm_server, fast_path).stream(MSG))
    assert items[-1][0].text == "echo: hi" and len(lm_server.requests) == 2
    lm_server.queue.append(lm_server.error(401, "nope"))
    with pytest.raises(sf.AuthenticationError):
        list(lm_for(lm_server, fast_path).stream(MSG))


def test_timeout_maps_to_lm_timeout(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_server.queue.append(Reply(body=completion_body(["late"]), delay=1.0))
    with pytest.raises(sf.LMTimeoutError) as info:
        lm_for(lm_server, fast_path, num_retries=0)(MSG, timeout=0.2)
    assert info.value.retryable


def test_connection_refused_is_a_provider_error(fast_path: bool) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lm = LM("openai/fake", api_base=f"http://127.0.0.1:{port}/v1", api_key="k", fast_path=fast_path,
            cache=False, num_retries=1, retry_delay=0.001)
    with pytest.raises(sf.ProviderError) as info:
        lm(MSG)
    assert info.value.retryable


def test_errors_are_recorded_and_counted(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server, True)
    lm_server.queue.append(lm_server.error(400, "bad input"))
    with pytest.raises(sf.BadRequestError):
        lm(MSG)
    assert lm.stats["errors"] == 1
    entry = lm.history[-1]
    assert entry.error is not None and "bad input" in entry.error and entry.completions == []


def test_insufficient_quota_is_not_retried(lm_server: FakeOpenAIServer) -> None:
    lm_server.queue.extend([lm_server.error(429, "You exceeded your quota", code="insufficient_quota"), ok()])
    with pytest.raises(sf.RateLimitError) as info:
        lm_for(lm_server, True)(MSG)
    assert not info.value.retryable and len(lm_server.requests) == 1


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(num_retries=3, base_delay=1.0, max_delay=5.0, max_retry_after=30)
    rate = sf.RateLimitError("x", retry_after=2.5)
    assert policy.delay(rate, 0) == 2.5
    assert policy.delay(sf.RateLimitError("x", retry_after=999), 0) == 30
    provider = sf.ProviderError("x")
    for attempt in range(6):
        d = policy.delay(provider, attempt)
        assert 0 <= d <= min(5.0, 2**attempt)
    assert policy.should_retry(provider, 2) and not policy.should_retry(provider, 3)
    assert not policy.should_retry(sf.BadRequestError("x"), 0)
    assert not policy.should_retry(ValueError("x"), 0)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_non_api_exceptions_pass_through_unchanged() -> None:
    bug = KeyError("x")
    assert map_exception(bug, model="m") is bug
    timeout = map_exception(TimeoutError("slow"), model="m")
    assert isinstance(timeout, sf.LMTimeoutError)


@pytest.mark.parametrize("status", [500, 400, 401, 429])
def test_an_error_page_of_megabytes_is_cut_in_the_message_and_kept_whole_beside_it(status: int) -> None:
    # a hostile or broken server's 2 MB error page was the whole message: of every retry's log
    # line, of every traceback (an attack on the new transport, issue 27 third pass)
    from sigform.lm.errors_map import map_exception
    from sigform.lm.transport import StatusError

    page = b"<html>" + b"x" * 2_000_000 + b"</html>"
    err = map_exception(StatusError(status, {}, page, "http://127.0.0.1:1/v1"), model="openai/m")
    assert len(str(err)) < 2_500 and str(err).endswith("characters; all in .provider_message)")
    assert err.provider_message is not None and len(err.provider_message) > 2_000_000
