"""Model-name typos are found when the LM is built, offline, with a did-you-mean; unknown names on
known providers warn once (issue 17, item 6). A missing key is not reported as HTTP 500."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import sigform as sf
from sigform.lm.model_names import UnknownModelWarning

ROOT = Path(__file__).resolve().parents[2]


def test_a_bare_typo_fails_at_construction_with_a_suggestion() -> None:
    with pytest.raises(ValueError) as info:
        sf.LM("gpt-4o-minii")
    message = str(info.value)
    assert "unknown model 'gpt-4o-minii'" in message
    assert "did you mean 'gpt-4o-mini'?" in message
    assert "'openai/gpt-4o-minii'" in message  # how to name the provider


def test_an_unknown_provider_fails_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match=r"unknown provider 'opnai'.*did you mean 'openai/gpt-4o-mini'"):
        sf.LM("opnai/gpt-4o-mini")


def test_an_unknown_name_on_a_known_provider_warns_once() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sf.LM("anthropic/claude-sonet-4-5")
        sf.LM("anthropic/claude-sonet-4-5")
    found = [w for w in caught if issubclass(w.category, UnknownModelWarning)]
    assert len(found) == 1
    assert "did you mean 'anthropic/claude-sonnet-4-5'?" in str(found[0].message)
    assert found[0].filename == __file__  # points at the caller's line


@pytest.mark.parametrize(
    "model",
    ["gpt-4o-mini", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "ollama/llama3", "local"],
)
def test_known_names_pass_quietly(model: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownModelWarning)
        sf.LM(model)


def test_your_own_server_takes_any_name() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownModelWarning)
        sf.LM("openai/my-finetune-v3", api_base="http://127.0.0.1:9/v1")


def test_the_check_does_not_import_litellm() -> None:
    code = (
        "import sys, sigform as sf\n"
        "try:\n    sf.LM('gpt-4o-minii')\nexcept ValueError:\n    pass\n"
        "sf.LM('openai/gpt-4o-mini')\n"
        "print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_a_missing_key_is_not_an_http_500(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lm = sf.LM("openai/gpt-4o-mini", num_retries=0, cache=False)
    with pytest.raises(sf.AuthenticationError) as info:
        lm([{"role": "user", "content": "hi"}])
    assert info.value.status_code is None
    assert "HTTP" not in str(info.value)
    assert "no API key was found" in str(info.value)
