"""Credentials in headers, in api_base and in encoded forms are scrubbed wherever the api key is
(issue 13 item 4): a provider that echoes the request back in its error cannot make a secret
reach error text, tracebacks, history, inspect_history or hook payloads, on both routes."""

from __future__ import annotations

import io
import json
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply
from rich.console import Console

import sigform as sf
from sigform import hooks
from sigform.lm import LM
from sigform.lm.credentials import Credential, CredentialError, scrub
from sigform.lm.history import inspect_history

MSG = [{"role": "user", "content": "hi"}]
HEADER_SECRETS = {
    "x-api-key": "xak-header-secret-0001/abc+def",
    "api-key": "ak-header-secret-0002/ghi",
    "Authorization": "Bearer tok-header-secret-0003/jkl",
    "X-Upstream-Token": "tkn-header-secret-0004",
    "X-Client-Secret": "sec-header-secret-0005",
}
BARE = [v.removeprefix("Bearer ") for v in HEADER_SECRETS.values()]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


class Recorder(hooks.Callback):
    def __init__(self) -> None:
        self.payloads: list[str] = []

    def on_request(self, event: hooks.Event) -> None:
        self.payloads.append(repr(event.headers) + repr(event.payload))

    def on_error(self, event: hooks.Event) -> None:
        self.payloads.append(repr(event.payload) + str(event.error))


def echo_everything(status: int) -> Any:
    """A hostile provider: its error quotes every header it got, raw, JSON-escaped and URL-encoded."""

    def reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        raw = " ".join(f"{k}={v}" for k, v in headers.items())
        escaped = json.dumps(headers).replace("/", "\\/")
        encoded = "&".join(f"{k}={quote(v, safe='')}" for k, v in headers.items())
        return Reply(status=status, body={"error": {"message": f"rejected {raw} | {escaped} | {encoded}"}})

    return reply


def surfaces(lm: LM, err: BaseException, recorder: Recorder) -> str:
    out = io.StringIO()
    inspect_history(5, entries=list(lm.history), console=Console(file=out, width=400))
    return "\n".join(
        [
            str(err),
            repr(err),
            str(getattr(err, "provider_message", "")),
            "".join(traceback.format_exception(err)),
            repr(list(lm.history)),
            out.getvalue(),
            *recorder.payloads,
        ]
    )


def leaked(text: str, secrets: list[str]) -> list[str]:
    forms = []
    for s in secrets:
        forms += [s, quote(s, safe=""), json.dumps(s)[1:-1].replace("/", "\\/"), s[:8]]
    return [f for f in forms if f in text]


@pytest.mark.parametrize("status", [401, 500])
def test_credential_headers_echoed_by_the_provider_are_scrubbed(
    lm_server: FakeOpenAIServer, fast_path: bool, status: int
) -> None:
    lm_server.reply = echo_everything(status)
    recorder = Recorder()
    lm = LM(
        "openai/fake",
        api_base=lm_server.api_base,
        api_key="sk-the-api-key-000000000006/x",
        fast_path=fast_path,
        headers=HEADER_SECRETS,
        num_retries=0,
        callbacks=[recorder],
    )
    with pytest.raises(sf.LMError) as info:
        lm(MSG)
    assert lm_server.headers[-1]["x-api-key"] == HEADER_SECRETS["x-api-key"]  # they were sent
    text = surfaces(lm, info.value, recorder)
    assert "rejected" in text  # the provider's message is kept, scrubbed
    assert leaked(text, [*BARE, "sk-the-api-key-000000000006/x"]) == []


def test_hooks_see_credential_headers_masked_but_may_add_headers(lm_server: FakeOpenAIServer) -> None:
    class AddTrace(hooks.Callback):
        def on_request(self, event: hooks.Event) -> None:
            assert event.headers["x-api-key"] == "***"
            event.headers["X-Trace"] = "t-1"

    lm = LM("openai/fake", api_base=lm_server.api_base, headers=HEADER_SECRETS, callbacks=[AddTrace()])
    lm(MSG)
    sent = lm_server.headers[-1]
    assert sent["x-trace"] == "t-1" and sent["x-api-key"] == HEADER_SECRETS["x-api-key"]


def test_credentials_inside_api_base_are_masked(lm_server: FakeOpenAIServer) -> None:
    host = lm_server.api_base.removeprefix("http://")
    lm_server.reply = echo_everything(500)
    lm = LM("openai/fake", api_base=f"http://proxyuser:pw-in-url-0007@{host}", fast_path=True, num_retries=0)
    assert "pw-in-url-0007" not in repr(lm)
    with pytest.raises(sf.ProviderError) as info:
        lm(MSG)
    assert lm_server.headers[-1]["authorization"].startswith("Basic ")  # the URL's credentials were used
    text = surfaces(lm, info.value, Recorder())
    basic = lm_server.headers[-1]["authorization"].removeprefix("Basic ")
    assert leaked(text, ["pw-in-url-0007", basic]) == []
    assert lm.history[-1].api_base == f"http://***@{host}"
    query = LM("openai/fake", api_base="https://gw.example/v1?key=qk-in-url-0008&x=1")
    assert "qk-in-url-0008" not in repr(query)


def test_encoded_forms_of_every_credential_are_scrubbed() -> None:
    secret = "sk-a/b+c=d&e-000000009"
    slashed = json.dumps(secret).replace("/", "\\/")
    text = f"{secret} {quote(secret, safe='')} {json.dumps(secret)} {slashed}"
    assert leaked(scrub(text, [secret]), [secret]) == []


def test_a_failed_key_refresh_keeps_no_message_on_context(lm_server: FakeOpenAIServer) -> None:
    def refresh() -> str:
        raise RuntimeError("refresh failed for token sk-refresh-secret-0010")

    with pytest.raises(CredentialError) as direct:
        Credential("api_key", refresh, secret=True).get()
    assert direct.value.__context__ is None and direct.value.__cause__ is None
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=refresh)
    with pytest.raises(sf.LMError) as info:
        lm(MSG)
    chain, err = [], info.value
    while err is not None:
        chain.append(f"{err!r} {err}")
        err = err.__context__ or err.__cause__
    assert "sk-refresh" not in " ".join(chain) + "".join(traceback.format_exception(info.value))
