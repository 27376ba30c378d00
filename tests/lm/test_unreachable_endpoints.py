"""An endpoint that cannot be reached is reported with its URL and what the OS said, on both
routes and for sync and async calls, never as an HTTP status (issue 17, item 7). (The openai
SDK's aiohttp transport, which async fast-path calls use, reports every connection failure as a
connect timeout; sigform reads what it wraps.)"""

from __future__ import annotations

import asyncio
import socket

import pytest

import sigform as sf
from tests.lm_fake_openai import FakeOpenAIServer

ROUTES = [pytest.param(None, id="fast-path"), pytest.param(False, id="litellm")]
CALLS = [pytest.param(False, id="sync"), pytest.param(True, id="async")]


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return port


def _fail(api_base: str, fast_path: bool | None, use_async: bool = False) -> sf.ProviderError:
    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="sk-secret-123", num_retries=0, cache=False,
               fast_path=fast_path)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(sf.ProviderError) as info:
        if use_async:
            asyncio.run(lm.acall(messages))
        else:
            lm(messages)
    err = info.value
    assert err.status_code is None
    assert "HTTP" not in str(err) and "sk-secret-123" not in str(err)
    return err


@pytest.mark.parametrize("use_async", CALLS)
@pytest.mark.parametrize("fast_path", ROUTES)
def test_a_closed_port_is_connection_refused(fast_path: bool | None, use_async: bool) -> None:
    port = _closed_port()
    err = _fail(f"http://127.0.0.1:{port}/v1", fast_path, use_async)
    assert f"could not reach http://127.0.0.1:{port}/v1/chat/completions" in str(err)
    assert "connection refused" in str(err)


@pytest.mark.parametrize("use_async", CALLS)
@pytest.mark.parametrize("fast_path", ROUTES)
def test_an_unknown_host_is_a_dns_failure(fast_path: bool | None, use_async: bool) -> None:
    err = _fail("http://no-such-host.invalid:8000/v1", fast_path, use_async)
    assert "http://no-such-host.invalid:8000/v1" in str(err)
    assert "could not be resolved (DNS)" in str(err)


@pytest.mark.parametrize("use_async", CALLS)
@pytest.mark.parametrize("fast_path", ROUTES)
def test_https_to_a_plain_server_is_a_tls_failure(fast_path: bool | None, use_async: bool) -> None:
    with FakeOpenAIServer() as server:
        https = server.api_base.replace("http://", "https://")
        err = _fail(https, fast_path, use_async)
    assert f"could not reach {https}" in str(err)
    assert "TLS handshake failed" in str(err)


def test_user_info_and_query_never_reach_the_message() -> None:
    port = _closed_port()
    err = _fail(f"http://user:pw-secret@127.0.0.1:{port}/v1", None)
    assert "pw-secret" not in str(err) and "user:" not in str(err)
    assert f"http://127.0.0.1:{port}/v1" in str(err)


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6")
@pytest.mark.parametrize("use_async", CALLS)
@pytest.mark.parametrize("fast_path", ROUTES)
def test_an_ipv6_endpoint_is_shown_with_its_brackets(fast_path: bool | None, use_async: bool) -> None:
    # "http://::1:1/v1" was shown: no such URL, and the port cannot be told from the address
    err = _fail("http://[::1]:1/v1", fast_path, use_async)
    assert "could not reach http://[::1]:1/v1/chat/completions" in str(err)


@pytest.mark.parametrize("fast_path", ROUTES)
@pytest.mark.parametrize("api_base", ["http://127.0.0.1:99999/v1", "http://127.0.0.1:abc/v1"])
def test_an_endpoint_with_an_impossible_port_is_the_calls_error(
    fast_path: bool | None, api_base: str
) -> None:
    # reading the failed request's URL (and the JSON adapter's endpoint key) raised urllib's bare
    # "ValueError: Port out of range 0-65535" in place of the call's error
    lm = sf.LM("openai/gpt-4o-mini", api_base=api_base, api_key="sk-secret-123", num_retries=0, cache=False,
               fast_path=fast_path)
    for call in (lambda: lm([{"role": "user", "content": "hi"}]),
                 lambda: sf.Predict("q -> a", lm=lm, adapter=sf.JSONAdapter())(q="hi")):
        with pytest.raises(sf.LMError) as info:
            call()
        assert str(info.value).startswith("openai/gpt-4o-mini: ")
