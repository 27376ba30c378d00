"""History, usage totals, inspect_history, copies, state and import hygiene."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body
from rich.console import Console

import sigform as sf
from sigform.lm import LM, global_history, inspect_history

MSG = [{"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def lm_for(server: FakeOpenAIServer, **kw: object) -> LM:
    return LM("openai/fake", api_base=server.api_base, api_key="sk-k", **kw)


def test_history_records_calls(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = lm_for(lm_server, fast_path=fast_path)
    lm(MSG, temperature=0.2, n=2)
    entry = lm.history[-1]
    assert entry.model == "openai/fake" and entry.provider == "openai"
    assert entry.messages == MSG and entry.params == {"temperature": 0.2, "n": 2}
    assert [c.text for c in entry.completions] == ["echo: What is 2+2?"] * 2
    assert entry.latency > 0 and not entry.cache_hit and entry.error is None
    assert entry.backend == ("openai-compatible" if fast_path else "litellm")
    assert global_history()[-1] is entry


def test_history_is_a_snapshot_of_messages(lm_server: FakeOpenAIServer) -> None:
    messages = [{"role": "user", "content": "a"}]
    lm = lm_for(lm_server)
    lm(messages)
    messages[0]["content"] = "changed"
    assert lm.history[-1].messages[0]["content"] == "a"


def test_history_is_bounded(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server, history_size=3)
    for i in range(5):
        lm(f"q{i}")
    assert [e.messages[0]["content"] for e in lm.history] == ["q2", "q3", "q4"]


def test_usage_totals(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server)
    lm("a")
    lm("b")
    lm("a")  # cache hit: free
    assert lm.usage.prompt_tokens == 22 and lm.usage.completion_tokens == 14
    assert lm.usage.reasoning_tokens == 6 and lm.usage.cached_tokens == 4
    assert lm.stats == {"calls": 3, "cache_hits": 1, "errors": 0}


def test_inspect_history_prints_calls(lm_server: FakeOpenAIServer) -> None:
    lm_server.queue.append(Reply(body=completion_body(["4"], reasoning="2+2 is 4", tool_calls=[
        {"id": "c", "type": "function", "function": {"name": "calc", "arguments": '{"x": 2}'}}])))
    lm = lm_for(lm_server)
    lm([{"role": "system", "content": "Be brief."}, *MSG])
    lm([{"role": "system", "content": "Be brief."}, *MSG])
    buf = io.StringIO()
    inspect_history(2, console=Console(file=buf, width=120))
    out = buf.getvalue()
    assert "Be brief." in out and "What is 2+2?" in out and "2+2 is 4" in out
    assert "calc" in out and "11 prompt + 7 completion" in out
    assert "cache hit: True" in out and "cache hit: False" in out
    assert out.count("openai/fake") == 2


def test_sigform_inspect_history_is_exported() -> None:
    assert sf.inspect_history is inspect_history


def test_copy_keeps_settings_and_applies_overrides(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server, temperature=0.3, num_retries=1, fast_path=True)
    other = lm.copy(temperature=0.9, max_tokens=10)
    assert other.kwargs == {"temperature": 0.9, "max_tokens": 10} and lm.kwargs == {"temperature": 0.3}
    assert other.num_retries == 1 and other.fast_path is True and other.model == lm.model
    other(MSG)
    assert lm_server.headers[-1]["authorization"] == "Bearer sk-k"
    assert len(other.history) == 1 and len(lm.history) == 0


def test_repr_shows_settings(lm_server: FakeOpenAIServer) -> None:
    text = repr(lm_for(lm_server, temperature=0.0))
    assert text.startswith("LM('openai/fake'") and "temperature=0.0" in text and "api_key=***" in text


def test_many_concurrent_acalls(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = lm_for(lm_server, fast_path=fast_path, cache=False)

    async def run() -> list:
        return await asyncio.gather(*(lm.acall(f"q{i}") for i in range(40)))

    results = asyncio.run(run())
    assert [r[0].text for r in results] == [f"echo: q{i}" for i in range(40)]
    assert lm.stats["calls"] == 40


def test_import_sigform_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, sigform, sigform.lm, sigform.hooks\n"
        "lm = sigform.LM('openai/gpt-4o-mini', temperature=0)\n"
        "heavy = [m for m in ('litellm', 'openai', 'diskcache', 'rich') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
