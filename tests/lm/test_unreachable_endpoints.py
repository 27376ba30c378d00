"""An endpoint that cannot be reached is reported with its URL and what the OS said, on both
routes, never as an HTTP status (issue 17, item 7)."""

from __future__ import annotations

import socket

import pytest

import sigform as sf
from tests.lm_fake_openai import FakeOpenAIServer

ROUTES = [pytest.param(None, id="fast-path"), pytest.param(False, id="litellm")]


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return port


def _fail(api_base: str, fast_path: bool | None) -> sf.ProviderError:
    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="sk-secret-123", num_retries=0, cache=False,
               fast_path=fast_path)
    with pytest.raises(sf.ProviderError) as info:
        lm([{"role": "user", "content": "hi"}])
    err = info.value
    assert err.status_code is None
    assert "HTTP" not in str(err) and "sk-secret-123" not in str(err)
    return err


@pytest.mark.parametrize("fast_path", ROUTES)
def test_a_closed_port_is_connection_refused(fast_path: bool | None) -> None:
    port = _closed_port()
    err = _fail(f"http://127.0.0.1:{port}/v1", fast_path)
    assert f"could not reach http://127.0.0.1:{port}/v1/chat/completions" in str(err)
    assert "connection refused" in str(err)


@pytest.mark.parametrize("fast_path", ROUTES)
def test_an_unknown_host_is_a_dns_failure(fast_path: bool | None) -> None:
    err = _fail("http://no-such-host.invalid:8000/v1", fast_path)
    assert "http://no-such-host.invalid:8000/v1" in str(err)
    assert "could not be resolved (DNS)" in str(err)


@pytest.mark.parametrize("fast_path", ROUTES)
def test_https_to_a_plain_server_is_a_tls_failure(fast_path: bool | None) -> None:
    with FakeOpenAIServer() as server:
        https = server.api_base.replace("http://", "https://")
        err = _fail(https, fast_path)
    assert f"could not reach {https}" in str(err)
    assert "TLS handshake failed" in str(err)


def test_user_info_and_query_never_reach_the_message() -> None:
    port = _closed_port()
    err = _fail(f"http://user:pw-secret@127.0.0.1:{port}/v1", None)
    assert "pw-secret" not in str(err) and "user:" not in str(err)
    assert f"http://127.0.0.1:{port}/v1" in str(err)
