"""Where a request goes is part of its identity (issue 27, findings 8 and 12): the cache key and
the rate-limit bucket both use :func:`sigform.lm.request.endpoint_identity`, which reads the
effective endpoint wherever it comes from (``api_base``, ``OPENAI_BASE_URL``, ...), spelled one
way (``.../v1`` and ``.../v1/`` are one endpoint), and never holds a credential."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sigform as sf
from sigform.lm.cache import ResponseCache, scoped_key
from sigform.lm.rate_limit import limiter_of
from sigform.lm.request import Request, cache_key, endpoint_identity, endpoint_of
from sigform.testing.providers import OpenAIChatFake, Reply

ROOT = Path(__file__).resolve().parents[2]

_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import sigform as sf

    lm = sf.LM("openai/gpt-4o-mini", api_key="sk-same", cache=True, fast_path={fast})
    print(lm("which server are you?")[0].text)
    """
)


@pytest.mark.parametrize(("variable", "fast"), [("OPENAI_BASE_URL", True), ("OPENAI_API_BASE", False)])
def test_a_run_against_another_ambient_endpoint_is_not_served_the_first_ones_answer(
    tmp_path: Path, variable: str, fast: bool
) -> None:
    # server A's answer was returned for server B: the cache key had no endpoint when the LM
    # was given none, though OPENAI_BASE_URL chose where the request went
    with OpenAIChatFake(default=Reply("server A")) as a, OpenAIChatFake(default=Reply("server B")) as b:
        said = []
        for fake in (a, b, a):
            env = {**os.environ, "SIGFORM_CACHE_DIR": str(tmp_path / "cache"), variable: fake.api_base}
            env.pop("OPENAI_BASE_URL" if variable == "OPENAI_API_BASE" else "OPENAI_API_BASE", None)
            env.pop("OPENAI_API_KEY", None)
            script = _RUN.format(root=str(ROOT), fast=fast)
            done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            said.append(done.stdout.decode().strip())
        assert said == ["server A", "server B", "server A"]
        assert (len(a.requests), len(b.requests)) == (1, 1)  # A's second run was a cache hit


def _request(api_base: str | None) -> Request:
    return Request("openai/gpt-4o-mini", "openai", [{"role": "user", "content": "hi"}], {}, api_base)


def test_one_endpoint_spelled_two_ways_is_one_identity() -> None:
    same = ["http://Host.Example:80/v1/", "http://host.example/v1", "HTTP://host.example:80/v1//"]
    assert {endpoint_of(url) for url in same} == {"http://host.example/v1"}
    assert len({cache_key(_request(url)) for url in same}) == 1
    assert endpoint_of("https://h/v1?b=2&a=1") == endpoint_of("https://h/v1/?a=1&b=2")
    assert endpoint_of("http://h:8000/v1") != endpoint_of("http://h:8001/v1")
    assert endpoint_of("http://[::1]:8000/v1/") == "http://[::1]:8000/v1"


@pytest.mark.parametrize(
    "spelling",
    [
        "https://api.openai.com/v%31",  # an escaped unreserved character
        "https://api.openai.com./v1",  # the host's trailing dot (a fully qualified name)
        "https://api.openai.com/v1/./",  # a dot segment
        "https://api.openai.com/v1/.",
        "https://api.openai.com/beta/../v1",
        "https://api.openai.com/v1/%2E/",
        "https://API.OpenAI.com.:443/v%31/./",
    ],
)
def test_rfc_3986_spellings_of_one_endpoint_are_one_identity_and_one_bucket(spelling: str) -> None:
    # each was a second cache entry and a second rate-limit bucket (an attack on the first fix)
    plain = "https://api.openai.com/v1"
    assert endpoint_of(spelling) == endpoint_of(plain) == plain
    assert cache_key(_request(spelling)) == cache_key(_request(plain))
    kw = {"api_key": "k", "rpm": 600, "cache": False}
    assert limiter_of(sf.LM("openai/gpt-4o-mini", api_base=spelling, **kw)) is limiter_of(
        sf.LM("openai/gpt-4o-mini", api_base=plain, **kw)
    )


def test_escapes_that_change_the_path_and_names_that_need_resolving_stay_apart() -> None:
    assert endpoint_of("https://h/v1%2fchat") == endpoint_of("https://h/v1%2Fchat") != endpoint_of("https://h/v1/chat")
    assert endpoint_of("https://h/v1/../../v2") == "https://h/v2"  # never above the root
    # not resolved: localhost may be ::1, or another address in /etc/hosts; one bucket per name
    assert endpoint_of("http://localhost:8000/v1") != endpoint_of("http://127.0.0.1:8000/v1")


def test_v1_and_v1_slash_share_one_rate_limit_bucket() -> None:
    # two buckets let 22 requests through in one second at rpm=600
    with OpenAIChatFake(default=Reply("hi")) as fake:
        kw = {"api_key": "k", "rpm": 600, "cache": False}
        plain = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, **kw)
        slash = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base + "/", **kw)
        upper = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base.replace("http:", "HTTP:"), **kw)
        assert limiter_of(plain) is limiter_of(slash) is limiter_of(upper)
        other = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base + "/other", **kw)
        assert limiter_of(other) is not limiter_of(plain)


def test_the_ambient_endpoint_moves_the_key_and_the_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://a.example/v1")
    key_a = cache_key(_request(None))
    bucket_a = limiter_of(sf.LM("openai/gpt-4o-mini", rpm=600))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://b.example/v1/")
    assert cache_key(_request(None)) != key_a
    assert limiter_of(sf.LM("openai/gpt-4o-mini", rpm=600)) is not bucket_a
    monkeypatch.setenv("OPENAI_BASE_URL", "http://A.example:80/v1/")  # A again, spelled otherwise
    assert cache_key(_request(None)) == key_a


def test_credentials_in_an_endpoint_stay_out_of_its_identity_but_scope_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    scoped = []
    for password in ("pw-tenant-one-1234", "pw-tenant-two-5678"):
        for url in (f"http://user:{password}@proxy.example/v1?api_key=k{password}", None):
            monkeypatch.setenv("OPENAI_BASE_URL", f"https://user:{password}@ambient.example/v1")
            identity = endpoint_identity("openai", url)
            assert password not in identity and "user" not in identity
            scoped.append(scoped_key(cache_key(_request(url)), _request(url), cache))
    assert len(set(scoped)) == 4  # another password is another tenant: never a shared answer
