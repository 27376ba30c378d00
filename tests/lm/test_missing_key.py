"""A missing API key is said once, naming the setting to make; nothing is sent.

litellm checks some providers' keys before sending and reports a missing one as HTTP 401
(Anthropic), HTTP 500 (OpenAI's "Missing credentials") or a connection error to a stand-in
api.openai.com (Gemini). sigform's message had that text appended (or, for Gemini, said the
endpoint could not be reached); the provider's words stay on ``provider_message``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest

import sigform as sf
from sigform.lm.errors_map import map_exception

_PROVIDER_VARIABLES = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "VERTEX")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_PROVIDER_VARIABLES):
            monkeypatch.delenv(name)


def _error_of(model: str) -> sf.AuthenticationError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown-model notice is not what this is about
        lm = sf.LM(model, num_retries=0, cache=False)
    with pytest.raises(sf.AuthenticationError) as info:
        lm([{"role": "user", "content": "hi"}])
    return info.value


@pytest.mark.parametrize(
    ("model", "advice", "litellm_said"),
    [
        ("openai/gpt-4o-mini", "set OPENAI_API_KEY in the environment", "Missing credentials"),
        ("anthropic/claude-3-5-haiku-20241022", "set ANTHROPIC_API_KEY in the environment",
         "Missing Anthropic API Key"),
        ("gemini/gemini-2.0-flash", "set the provider's key in the environment (litellm looks for ",
         "Missing Gemini API key"),
    ],
)
def test_a_missing_key_names_the_setting_once_and_keeps_the_providers_words_apart(
    model: str, advice: str, litellm_said: str
) -> None:
    err = _error_of(model)
    message = str(err)
    assert message.startswith(f"{model}: no API key was found: {advice}")
    assert message.endswith(" or pass api_key=... to sf.LM(...)")
    assert "litellm." not in message and "HTTP" not in message and "could not reach" not in message
    assert litellm_said in (err.provider_message or "")  # nothing lost
    assert err.__cause__ is None and err.__context__ is None  # the provider's exception may quote a secret


def test_gemini_names_both_of_its_variables() -> None:
    message = str(_error_of("gemini/gemini-2.0-flash"))
    assert "GEMINI_API_KEY" in message and "GOOGLE_API_KEY" in message


def test_without_litellm_loaded_an_openai_model_still_names_its_variable() -> None:
    class OpenAIError(Exception):  # the SDK's own check, raised before any request
        __module__ = "openai"

    err = map_exception(OpenAIError("The api_key client option must be set"), model="gpt-4o-mini")
    assert isinstance(err, sf.AuthenticationError)
    assert str(err) == (
        "gpt-4o-mini: no API key was found: set OPENAI_API_KEY in the environment"
        " or pass api_key=... to sf.LM(...)"
    )


@pytest.mark.parametrize("api_base", [None, "https://api.openai.com/v1"])
def test_the_fast_path_to_openais_own_api_says_a_key_is_missing_instead_of_sending_a_placeholder(
    api_base: str | None,
) -> None:
    # the placeholder key is for local servers; OpenAI's API answered it with a 401 about an
    # incorrect key "sk-no-k...", which hid what to set
    lm = sf.LM("openai/gpt-4o-mini", num_retries=0, cache=False, fast_path=True, api_base=api_base)
    with pytest.raises(sf.AuthenticationError) as info:
        lm([{"role": "user", "content": "hi"}])
    assert str(info.value) == (
        "openai/gpt-4o-mini: no API key was found: set OPENAI_API_KEY in the environment"
        " or pass api_key=... to sf.LM(...)"
    )


def test_a_local_server_on_the_fast_path_still_needs_no_key(lm_server: Any) -> None:
    lm = sf.LM("openai/local-model", api_base=lm_server.api_base, num_retries=0, cache=False, fast_path=True)
    assert lm([{"role": "user", "content": "hi"}])[0].text
    sent = {name.lower(): value for name, value in lm_server.headers[-1].items()}
    assert sent["authorization"] == "Bearer sk-no-key-required"


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("key_from", ["api_key=", "environment"])
def test_a_server_saying_missing_api_key_to_a_key_it_got_is_a_rejection_not_a_setting_to_make(
    monkeypatch: pytest.MonkeyPatch, fast_path: bool, key_from: str
) -> None:
    # a proxy that wants its key in another header answers "Missing API key" to the key sent;
    # sigform told the user to set OPENAI_API_KEY or pass api_key=, which they had done, and
    # left out what the server said
    from sigform.testing.providers import ErrorReply, OpenAIChatFake

    key = "sk-user-0123456789abcdef"
    given: dict[str, Any] = {"api_key": key}
    if key_from == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", key)
        given = {}
    with OpenAIChatFake(default=ErrorReply(401, "Missing API key")) as fake, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown-model notice is not what this is about
        lm = sf.LM("openai/proxy-model", api_base=fake.api_base, num_retries=0, cache=False,
                   fast_path=fast_path, **given)
        with pytest.raises(sf.AuthenticationError) as info:
            lm([{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert message.startswith("openai/proxy-model: the provider rejected the credentials (HTTP 401): ")
    assert "Missing API key" in message and "no API key was found" not in message
    assert info.value.status_code == 401 and key not in message


def test_a_malformed_endpoint_without_a_key_is_the_calls_error_not_a_bare_value_error() -> None:
    # the "is it OpenAI's own API?" check split the URL and let urlsplit's ValueError out,
    # naming neither the model nor the call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = sf.LM("openai/gpt-4o-mini", api_base="http://[::1/v1", num_retries=0, cache=False,
                   fast_path=True)
    with pytest.raises(sf.LMError) as info:
        lm([{"role": "user", "content": "hi"}])
    assert str(info.value).startswith("openai/gpt-4o-mini: ")


def test_openai_base_url_pointing_at_a_local_server_still_needs_no_key(
    lm_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the SDK sends to OPENAI_BASE_URL when it is set; the keyless check took every openai/ model
    # without an api_base for OpenAI's own API and refused to send
    monkeypatch.setenv("OPENAI_BASE_URL", lm_server.api_base)
    lm = sf.LM("openai/local-model", num_retries=0, cache=False, fast_path=True)
    assert lm([{"role": "user", "content": "hi"}])[0].text
    sent = {name.lower(): value for name, value in lm_server.headers[-1].items()}
    assert sent["authorization"] == "Bearer sk-no-key-required"
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")  # OpenAI's own, named
    openai_lm = sf.LM("openai/gpt-4o-mini", num_retries=0, cache=False, fast_path=True)
    with pytest.raises(sf.AuthenticationError, match="no API key was found"):
        openai_lm([{"role": "user", "content": "hi"}])
