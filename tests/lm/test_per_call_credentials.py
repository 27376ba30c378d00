"""Credentials given per call, or echoed back by a provider, stay out of errors, history,
request bodies and recorded headers."""

from __future__ import annotations

import io
import json
import shlex
import sys

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform.lm import LM, global_history

# every test here gets its own cache directory (a cached answer would hide the request)
pytestmark = pytest.mark.usefixtures("isolated_cache")


SECRET = "sk-review-secret-0123456789abcdef"


MSG = [{"role": "user", "content": "hi"}]


def _echo_key_error(server: FakeOpenAIServer) -> None:
    server.queue.append(server.error(401, f"Incorrect API key provided: {SECRET}.", code="invalid_api_key"))


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(lambda: SECRET, id="callable"),
        pytest.param("cmd:" + shlex.join([sys.executable, "-c", f"print({SECRET!r})"]), id="cmd-first-call"),
    ],
)
def test_a_key_the_provider_echoes_is_scrubbed_whatever_its_form(
    lm_server: FakeOpenAIServer, fast_path: bool, form: object
) -> None:
    # the key of a callable (resolved per call) or a command (resolved on the first call) was not
    # known when the error was scrubbed, so the provider's echo of it reached the error message
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=form, fast_path=fast_path, num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        lm(MSG, cache=False)
    err = info.value
    shown = f"{err}\n{err.provider_message}\n{err!r}\n{lm.history[-1].error}"
    assert "Incorrect API key provided" in shown
    assert SECRET not in shown and SECRET[:8] not in shown


def test_a_streamed_call_scrubs_a_callable_key(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, api_key=lambda: SECRET, fast_path=fast_path,
            num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        list(lm.stream(MSG, cache=False))
    assert SECRET not in str(info.value)


def test_a_per_call_api_key_is_a_credential_not_a_request_parameter(
    lm_server: FakeOpenAIServer, fast_path: bool
) -> None:
    # it was sent in the request body (fast path) and recorded in history and hook events
    seen: list[str] = []

    class Spy(sf.Callback):
        def on_request(self, event: sf.hooks.Event) -> None:
            seen.append(repr(event.payload))

    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, callbacks=[Spy()])
    assert lm(MSG, api_key=SECRET)[0].text == "echo: hi"
    assert "api_key" not in lm_server.requests[-1]
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    from rich.console import Console

    buf = io.StringIO()
    sf.inspect_history(3, console=Console(file=buf, width=200))
    surfaces = "\n".join([repr(global_history()), repr(list(lm.history)), buf.getvalue(), *seen])
    assert SECRET not in surfaces
    # the per-call key is not part of the cache identity either: a second call is a cache hit
    lm(MSG, api_key=SECRET)
    assert lm.history[-1].cache_hit


def test_a_per_call_key_error_is_scrubbed(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, num_retries=0)
    _echo_key_error(lm_server)
    with pytest.raises(sf.AuthenticationError) as info:
        lm(MSG, api_key=SECRET, cache=False)
    assert SECRET not in str(info.value)


def test_a_per_call_api_base_is_refused_clearly(lm_server: FakeOpenAIServer) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base)
    with pytest.raises(TypeError, match=r"api_base.*lm\.copy"):
        lm(MSG, api_base="http://127.0.0.1:9/v1")
    assert lm_server.requests == []


def test_secret_named_per_call_settings_stay_out_of_the_body(lm_server: FakeOpenAIServer) -> None:
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True)
    lm(MSG, aws_secret_access_key=SECRET, cache=False)
    assert SECRET not in json.dumps(lm_server.requests[-1])
    assert SECRET not in repr(lm.history[-1])


def test_prompt_cache_key_is_a_request_parameter_not_a_secret(lm_server: FakeOpenAIServer) -> None:
    # OpenAI's prompt_cache_key ends in "_key" but is sent in the body (it was dropped as a secret)
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=True, prompt_cache_key="tenant-1")
    lm(MSG, cache=False)
    assert lm_server.requests[-1]["prompt_cache_key"] == "tenant-1"
    lm(MSG, cache=False, prompt_cache_key="tenant-2")
    assert lm_server.requests[-1]["prompt_cache_key"] == "tenant-2"


def test_extra_headers_are_headers_never_recorded(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    # litellm's name for request headers was kept as a request parameter: shown by repr(lm), saved
    # by dump_state and recorded in history, Authorization value and all
    auth = {"Authorization": f"Bearer {SECRET}"}
    lm = LM("openai/fake", api_base=lm_server.api_base, fast_path=fast_path, extra_headers=auth)
    lm(MSG)
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    lm(MSG, extra_headers={"X-Trace": "t1"}, cache=False)
    assert lm_server.headers[-1]["x-trace"] == "t1"
    assert lm_server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    surfaces = [repr(lm), json.dumps(lm.dump_state()), repr(list(lm.history)), repr(lm.copy())]
    assert all(SECRET not in s for s in surfaces)
    assert "extra_headers" not in lm_server.requests[-1]
