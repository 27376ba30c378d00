"""Response cache: identity, immutability, hit marking, disk persistence, configuration."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import (
    FakeOpenAIServer,
    Reply,
    completion_body,
)

import sigform as sf
from sigform.lm import LM, ResponseCache, cache_directory, get_cache, global_history
from sigform.lm.cache import reset_caches
from sigform.lm.credentials import Credential
from sigform.lm.interface import Completion
from sigform.lm.request import Request, cache_key


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


@pytest.fixture
def fake(lm_server: FakeOpenAIServer) -> FakeOpenAIServer:
    return lm_server


MSG = [{"role": "user", "content": "hi"}]
SECRET = "sk-cache-secret-abcdefghijklmnop"


def make_lm(fake: FakeOpenAIServer, fast: bool = True, **kw: Any) -> LM:
    return LM("openai/fake", api_base=fake.api_base, api_key=SECRET, fast_path=fast, **kw)


def test_second_call_is_a_marked_hit(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    first = lm(MSG, temperature=0)
    second = lm(MSG, temperature=0)
    assert len(fake.requests) == 1
    assert [c.text for c in second] == [c.text for c in first]
    assert not first[0].usage.cache_hit and second[0].usage.cache_hit
    assert [e.cache_hit for e in lm.history] == [False, True]
    assert global_history()[-1].cache_hit
    assert lm.stats == {"calls": 2, "cache_hits": 1, "errors": 0}
    # only the provider call counts in the usage totals
    assert lm.usage.prompt_tokens == 11


def test_rollout_id_is_in_the_key_but_never_sent(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    lm(MSG, temperature=1, rollout_id=0)
    lm(MSG, temperature=1, rollout_id=1)  # another attempt: its own entry, a new request
    [again] = lm(MSG, temperature=1, rollout_id=1)
    [plain] = lm(MSG, temperature=1)
    assert again.usage.cache_hit and not plain.usage.cache_hit
    assert len(fake.requests) == 3
    assert all("rollout_id" not in body for body in fake.requests)
    streamed = make_lm(fake, fast_path, rollout_id=7)  # as an LM default too
    list(streamed.stream(MSG, temperature=1))
    assert "rollout_id" not in fake.requests[-1] and len(fake.requests) == 4


def test_integral_floats_and_ints_share_a_key(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake)
    lm(MSG, temperature=0)
    lm(MSG, temperature=0.0)
    lm(MSG, max_tokens=10, temperature=1)
    lm(MSG, max_tokens=10, temperature=1.0)
    assert len(fake.requests) == 2


def test_sync_and_async_share_entries(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    lm(MSG)
    [c] = asyncio.run(lm.acall(MSG))
    assert c.usage.cache_hit and len(fake.requests) == 1


def test_every_part_of_the_request_is_in_the_key(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake)
    lm(MSG)
    lm([{"role": "user", "content": "other"}])
    lm(MSG, temperature=0.5)
    lm(MSG, stop=["x"])
    lm(MSG, n=2)
    LM("openai/fake2", api_base=fake.api_base, api_key=SECRET)(MSG)
    LM("openai/fake", api_base=fake.api_base + "/", api_key=SECRET)(MSG)  # same base, trailing slash
    assert len(fake.requests) == 6


def test_api_key_is_not_part_of_the_request_digest(fake: FakeOpenAIServer) -> None:
    # the digest never holds the key; the cache scopes it with a keyed fingerprint (see
    # test_lm_cache_scope.py: two keys never share entries)
    req = Request("openai/fake", "openai", MSG, {}, fake.api_base, Credential("api_key", SECRET))
    other = Request("openai/fake", "openai", MSG, {}, fake.api_base, None)
    assert cache_key(req) == cache_key(other)


def test_secret_never_reaches_the_disk(fake: FakeOpenAIServer, isolated_cache: Path) -> None:
    make_lm(fake)(MSG)
    blobs = b"".join(p.read_bytes() for p in isolated_cache.rglob("*") if p.is_file())
    assert blobs  # something was written
    assert SECRET.encode() not in blobs


def test_mutating_a_result_cannot_poison_the_cache(fake: FakeOpenAIServer) -> None:
    fake.reply = lambda b, h: Reply(body=completion_body(["t"], tool_calls=[
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": [1]}'}}],
        logprobs={"content": [{"token": "t", "logprob": 0.0}]}))
    lm = make_lm(fake)
    [first] = lm(MSG)
    first.tool_calls[0].arguments["a"].append(2)
    first.logprobs["content"].clear()
    [hit] = lm(MSG)
    assert hit.usage.cache_hit
    assert hit.tool_calls[0].arguments == {"a": [1]}
    assert hit.logprobs["content"][0]["token"] == "t"
    hit.tool_calls[0].arguments["a"].append(3)
    assert lm(MSG)[0].tool_calls[0].arguments == {"a": [1]}


def test_disk_cache_survives_a_new_process_state(fake: FakeOpenAIServer) -> None:
    make_lm(fake)(MSG)
    reset_caches()  # as if the process restarted: memory is gone, the disk remains
    [c] = make_lm(fake)(MSG)
    assert c.usage.cache_hit and len(fake.requests) == 1


def test_cache_off_per_lm_per_call_and_globally(fake: FakeOpenAIServer) -> None:
    lm = make_lm(fake)
    lm(MSG)
    lm(MSG, cache=False)
    make_lm(fake, cache=False)(MSG)
    with sf.context(cache=False):
        lm(MSG)
    assert len(fake.requests) == 4
    assert lm(MSG)[0].usage.cache_hit


def test_failures_are_not_cached(fake: FakeOpenAIServer) -> None:
    fake.queue.append(fake.error(400, "bad"))
    lm = make_lm(fake)
    with pytest.raises(sf.BadRequestError):
        lm(MSG)
    assert not lm(MSG)[0].usage.cache_hit
    assert len(fake.requests) == 2


def test_cache_location_from_settings_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path / "env"))
    assert cache_directory() == tmp_path / "env"
    with sf.context(cache_dir=str(tmp_path / "ctx")):
        assert cache_directory() == tmp_path / "ctx"
        assert get_cache().directory == tmp_path / "ctx"
    monkeypatch.delenv("SIGFORM_CACHE_DIR")
    assert cache_directory() == Path.home() / ".cache" / "sigform"


def test_memory_lru_bound_and_disk_size_limit(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, memory_entries=2, size_limit=10_000_000)
    for i in range(4):
        cache.set(f"k{i}", [Completion(str(i))])
    assert list(cache._memory) == ["k2", "k3"]
    assert cache.get("k0") == [Completion("0")]  # from disk
    assert len(cache) == 4
    memory_only = ResponseCache(None, memory_entries=1)
    memory_only.set("a", [Completion("1")])
    memory_only.set("b", [Completion("2")])
    assert memory_only.get("a") is None and memory_only.get("b") == [Completion("2")]
    with sf.context(cache_size_limit=12345, cache_memory_entries=7, cache_disk=False):
        c = get_cache()
        assert c.directory is None and c.memory_entries == 7 and c.size_limit == 12345


def test_disk_size_limit_evicts_the_oldest_entries(tmp_path: Path) -> None:
    # entries are written in background batches; each batch ends with one eviction pass
    limit = 1_000_000
    cache = ResponseCache(tmp_path, memory_entries=1, size_limit=limit)
    for i in range(60):
        cache.set(f"k{i}", [Completion("x" * 50_000)])  # 3 MB in all
    cache.flush()
    disk = cache._disk_cache()
    assert disk.volume() <= limit
    assert cache.get("k59") == [Completion("x" * 50_000)]
    assert "k0" not in disk


def test_stream_results_are_cached_and_replayed(fake: FakeOpenAIServer, fast_path: bool) -> None:
    lm = make_lm(fake, fast_path)
    streamed = list(lm.stream(MSG))[-1]
    replay = list(lm.stream(MSG))
    assert len(fake.requests) == 1
    assert replay[0].text == "echo: hi"
    assert replay[-1][0].usage.cache_hit and replay[-1][0].text == streamed[0].text
