"""The fast path's SDK clients share one TLS context (sigform.lm.sdk_clients): building a client
no longer loads the CA certificates again, and a changed SSL_CERT_FILE still takes effect."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer

from sigform.lm import LM, openai_backend
from sigform.lm.sdk_clients import async_client, shared_tls_context, sync_client


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def sync_context(client: Any) -> ssl.SSLContext:
    return client._client._transport._pool._ssl_context


def async_context(client: Any) -> ssl.SSLContext:
    return client._client._transport.ssl_context


def test_every_client_of_the_fast_path_shares_one_tls_context(lm_server: FakeOpenAIServer) -> None:
    base = lm_server.api_base
    lms = [LM("openai/fake", api_base=base, api_key=f"sk-key-{i}", cache=False) for i in range(2)]
    for lm in lms:
        assert lm("hi")[0].text == "echo: hi"
    made = [lease.client for lease in openai_backend.get_backend()._sync._slots.values()]
    contexts = {id(sync_context(c)) for c in made}
    assert len(made) >= 2 and contexts == {id(shared_tls_context())}

    async def run() -> set[int]:
        for lm in lms:
            assert (await lm.acall("hi"))[0].text == "echo: hi"
        pool = openai_backend.get_backend()._async[asyncio.get_running_loop()]
        return {id(async_context(lease.client)) for lease in pool._slots.values()}

    assert asyncio.run(run()) == {id(shared_tls_context())}


def test_the_context_is_the_one_the_sdk_would_build() -> None:
    import openai

    own = openai.OpenAI(api_key="k", base_url="https://127.0.0.1:9/v1")
    ours = sync_client(api_key="k", base_url="https://127.0.0.1:9/v1")
    for attr in ("verify_mode", "check_hostname", "minimum_version", "options"):
        assert getattr(sync_context(ours), attr) == getattr(sync_context(own), attr)
    assert sync_context(ours).cert_store_stats() == sync_context(own).cert_store_stats()
    assert ours.timeout == own.timeout and ours._client.follow_redirects == own._client.follow_redirects
    assert ours._client._transport._pool._max_connections == own._client._transport._pool._max_connections
    own.close()
    ours.close()


def test_a_changed_ca_file_gets_its_own_context(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    default = shared_tls_context()
    with monkeypatch.context() as m:
        m.setenv("SSL_CERT_FILE", certifi.where())
        m.delenv("SSL_CERT_DIR", raising=False)
        custom = shared_tls_context()
        assert custom is not default and custom is shared_tls_context()

        async def run() -> ssl.SSLContext:
            client = async_client(api_key="k", base_url="http://127.0.0.1:9/v1")
            try:
                return async_context(client)
            finally:
                await client.close()

        assert asyncio.run(run()) is custom
    assert shared_tls_context() is default


def test_a_lease_released_while_a_client_is_being_made_does_not_deadlock() -> None:
    # making a client may run the garbage collector, which can finalise an abandoned stream whose
    # cleanup releases its lease on the same thread, inside the pool's acquire
    import threading

    from sigform.lm.client_pool import ClientPool

    pool = ClientPool(4)
    first, _ = pool.acquire("a", "a", object)

    def make() -> object:
        pool.release(first)
        return object()

    done = threading.Event()
    worker = threading.Thread(target=lambda: (pool.acquire("b", "b", make), done.set()), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done.is_set(), "acquire deadlocked on a release made while the client was being made"
    assert first.users == 0
