"""One retry decision for every call path (issue 16 item 2): :class:`sigform.lm.retry.Attempts`
applies a :class:`RetryPolicy` to one request without doing any I/O; the plain, top-up and
streamed paths (sync and async) only send, sleep and re-aim."""

from __future__ import annotations

import httpx
import pytest

import sigform as sf
from sigform.lm.retry import Attempts, RetryPolicy

SECRET = "sk-attempts-secret-0123456789"


def _status(code: int, message: str = "", headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    """The exception an HTTP client raises for a ``code`` response."""
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(code, headers=headers, text=message or f"status {code}", request=request)
    return httpx.HTTPStatusError(message or f"status {code}", request=request, response=response)


def test_retryable_failures_get_a_wait_until_the_retries_are_spent() -> None:
    attempts = Attempts(RetryPolicy(num_retries=2, base_delay=0.0), "openai/x")
    waits = [attempts.failed(_status(503), []) for _ in range(3)]
    assert waits == [0.0, 0.0, None]
    assert isinstance(attempts.error, sf.ProviderError) and attempts.number == 2


def test_a_retry_after_is_the_wait() -> None:
    attempts = Attempts(RetryPolicy(num_retries=1), "openai/x")
    assert attempts.failed(_status(429, "slow down", {"retry-after": "2"}), []) == 2.0
    assert isinstance(attempts.error, sf.RateLimitError)


def test_a_final_failure_is_not_retried() -> None:
    attempts = Attempts(RetryPolicy(num_retries=3), "openai/x")
    assert attempts.failed(_status(401, f"bad key {SECRET}"), [SECRET]) is None
    assert isinstance(attempts.error, sf.AuthenticationError)
    assert SECRET not in str(attempts.error)  # scrubbed


def test_an_attempt_that_delivered_output_is_not_repeated() -> None:
    attempts = Attempts(RetryPolicy(num_retries=3), "openai/x")
    assert attempts.failed(_status(503), [], repeatable=False) is None
    assert attempts.number == 0


def test_a_bug_is_reraised_as_it_is() -> None:
    attempts = Attempts(RetryPolicy(num_retries=3), "openai/x")
    bug = KeyError("a bug in a backend")
    with pytest.raises(KeyError) as info:
        attempts.failed(bug, [])
    assert info.value is bug
