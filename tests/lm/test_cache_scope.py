"""The cache is scoped to who asks (issue 13 item 5): two LMs that differ only in the API key
(literal, env or callable), organization, project or headers never share entries, while the key
itself never reaches the cache key or the cache files."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer

from sigform.lm import LM, get_cache
from sigform.lm.cache import ResponseCache, scoped_key
from sigform.lm.credentials import Credential
from sigform.lm.request import Request, cache_key

MSG = [{"role": "user", "content": "hi"}]
KEY_A = "sk-tenant-a-0000000000000001"
KEY_B = "sk-tenant-b-0000000000000002"


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def lm(fake: FakeOpenAIServer, fast_path: bool = True, **kw: Any) -> LM:
    return LM("openai/fake", api_base=fake.api_base, fast_path=fast_path, **kw)


def test_a_revoked_key_never_gets_another_keys_answer(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm(lm_server, fast_path, api_key=KEY_A)(MSG)
    lm(lm_server, fast_path, api_key=KEY_B)(MSG)  # the server must see this request
    assert len(lm_server.requests) == 2
    assert lm_server.headers[-1]["authorization"] == f"Bearer {KEY_B}"
    lm(lm_server, fast_path, api_key=KEY_A)(MSG)  # the same key still hits
    assert len(lm_server.requests) == 2


def test_env_and_callable_keys_are_scoped_by_their_value(
    lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SF_SCOPE_KEY", KEY_A)
    lm(lm_server, api_key="env:SF_SCOPE_KEY")(MSG)
    monkeypatch.setenv("SF_SCOPE_KEY", KEY_B)  # the variable now holds another tenant's key
    lm(lm_server, api_key="env:SF_SCOPE_KEY")(MSG)
    assert len(lm_server.requests) == 2
    lm(lm_server, api_key=lambda: KEY_A)(MSG)  # a callable giving key A: key A's entry
    assert len(lm_server.requests) == 2
    lm(lm_server, api_key=lambda: "sk-tenant-c-0000000000000003")(MSG)
    assert len(lm_server.requests) == 3


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"organization": "org-a"}, {"organization": "org-b"}),
        ({"project": "proj-a"}, {"project": "proj-b"}),
        ({"headers": {"X-Tenant": "a"}}, {"headers": {"X-Tenant": "b"}}),
        ({"headers": {"x-api-key": KEY_A}}, {"headers": {"x-api-key": KEY_B}}),
    ],
)
def test_request_shaping_settings_are_in_the_scope(
    lm_server: FakeOpenAIServer, first: dict[str, Any], second: dict[str, Any]
) -> None:
    lm(lm_server, api_key=KEY_A, **first)(MSG)
    lm(lm_server, api_key=KEY_A, **second)(MSG)
    assert len(lm_server.requests) == 2
    lm(lm_server, api_key=KEY_A, **first)(MSG)
    assert len(lm_server.requests) == 2


def test_the_scope_is_keyed_per_cache_folder_and_the_key_is_nowhere(tmp_path: Path) -> None:
    req = Request("openai/fake", "openai", MSG, {}, "http://h/v1", Credential("api_key", KEY_A, secret=True))
    digest = cache_key(req)
    scoped = scoped_key(digest, req)
    assert scoped is not None and scoped != digest and KEY_A not in scoped
    secret_file = Path(os.environ["SIGFORM_CACHE_DIR"]) / "cache-secret"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600 and len(secret_file.read_bytes()) == 32
    assert scoped_key(digest, req) == scoped  # stable for one folder
    other = ResponseCache(tmp_path / "elsewhere")
    assert other.fingerprint(b"x") != get_cache().fingerprint(b"x")  # another folder, another secret
