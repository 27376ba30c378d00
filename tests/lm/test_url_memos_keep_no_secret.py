"""The per-call memos of endpoint URLs (the history's redacted endpoint, the endpoint key of the
JSON adapter's abilities) keep no URL that may carry credentials, so a secret in ``api_base``
goes with its LM: before, ``redact_url``'s lru_cache and the standard library's ``urlsplit``
memo (Python 3.11+: the last 128 URLs split) held ``https://user:pass@host/v1?api_key=...``
for the life of the process. Counted with ``sys.getrefcount`` (CPython)."""

from __future__ import annotations

import gc
import sys
import urllib.parse
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import sigform as sf
from sigform.lm import capabilities, credentials, wire
from sigform.lm.request import Request

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython", reason="counts CPython references")

_counter = iter(range(10**9))


def fresh(template: str) -> str:
    """A URL string object nobody else holds (built at run time, never interned)."""
    return "".join([template, str(next(_counter))])


@pytest.mark.parametrize(
    "read",
    [
        credentials.redact_url,
        credentials.url_secrets,
        credentials.strip_url_credentials,
        credentials.url_credential_parts,
        lambda url: capabilities.endpoint_key("openai/m", url),
        # asked before a fast-path request that found no key (is it OpenAI's own API?)
        lambda url: wire.is_openai_api(Request("m", "openai", [], {}, api_base=url), url),
    ],
    ids=[
        "redact_url",
        "url_secrets",
        "strip_url_credentials",
        "url_credential_parts",
        "endpoint_key",
        "is_openai_api",
    ],
)
@pytest.mark.parametrize(
    "template",
    ["https://user:hunter22@proxy.example/v1?x=", "https://proxy.example/v1?api_key=SECRET&n="],
)
def test_reading_a_url_with_credentials_keeps_no_reference_to_it(
    read: Callable[[str], Any], template: str
) -> None:
    url = fresh(template)
    before = sys.getrefcount(url)
    read(url)
    read(url)  # the memo hit too
    assert sys.getrefcount(url) == before


def test_an_lm_gone_leaves_no_reference_to_its_credential_url() -> None:
    url = fresh("https://user:hunter22@proxy.example/v1?api_key=SECRET&n=")
    before = sys.getrefcount(url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = sf.LM("openai/my-proxy-model", api_base=url)
    assert "hunter22" not in repr(lm) and "SECRET" not in repr(lm)
    assert lm.supports("json_schema") in (True, False)  # the endpoint key, as a call asks it
    del lm
    gc.collect()
    assert sys.getrefcount(url) == before


def test_the_memos_still_answer_per_url() -> None:
    # two URLs that differ only in their secret have their own answers (no digest collision)
    a = fresh("https://user:one@proxy.example/v1?api_key=A&n=")
    b = a.replace("user:one", "user:two")
    assert credentials.redact_url(a) == a.replace("user:one", "***").replace("api_key=A", "api_key=***")
    assert credentials.redact_url(b) == b.replace("user:two", "***").replace("api_key=A", "api_key=***")
    plain = fresh("http://127.0.0.1:8080/v")
    assert capabilities.endpoint_key("m", plain) == f"m at {plain}"
    assert capabilities.endpoint_key("m", "http://user:pw@h:81/v1/?k=1") == "m at http://h:81/v1"
    assert capabilities.endpoint_key("m", "user:pw@h/v1?api_key=1") == "m at h/v1"


@pytest.mark.skipif(not hasattr(urllib.parse, "_parse_cache"), reason="Python 3.10's urlsplit memo (a dict)")
def test_python_310s_urlsplit_memo_keeps_no_credential_url() -> None:
    # 3.10 memoises urlsplit in a plain dict (the last 20 URLs), which has no __wrapped__ to skip:
    # split_url fell back to urlsplit itself and the URL stayed in that dict
    url = fresh("https://user:hunter22@proxy.example/v1?api_key=SECRET&n=")
    before = sys.getrefcount(url)
    credentials.split_url(url)
    credentials.redact_url(url)
    assert sys.getrefcount(url) == before
    assert not any("hunter22" in str(key) for key in urllib.parse._parse_cache)
