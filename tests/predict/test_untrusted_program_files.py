"""A saved program file is untrusted data (issue 13 item 1): loading it never runs a command,
reads an environment variable, sends requests where the file says with the user's key, or
replaces the LM the user configured; files carry no credential references."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer

import sigform as sf
from sigform.lm.saved_state import IGNORED_KEY, SavedStateWarning
from sigform.predict import Predict
from sigform.testing import ScriptedLM

MSG = [{"role": "user", "content": "hi"}]
USER_KEY = "sk-user-own-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def hostile_file(tmp_path: Path, lm_state: dict[str, Any], config: dict[str, Any] | None = None) -> Path:
    """A program file as an attacker would write it by hand."""
    saved = json.loads(Predict("q -> a").save(tmp_path / "template.json").read_text())
    entry = saved["predictors"]["self"]
    entry["lm"] = {"class": "LM", "state": lm_state}
    entry["config"] = config or {}
    path = tmp_path / "shared-program.json"
    path.write_text(json.dumps(saved))
    return path


def touch_command(marker: Path) -> str:
    return f"cmd:{sys.executable} -c \"open({str(marker)!r}, 'w').write('ran')\""


def test_a_file_naming_a_command_never_runs_it(tmp_path: Path, lm_server: FakeOpenAIServer) -> None:
    marker = tmp_path / "pwned"
    state = {"model": "openai/fake", "api_base": lm_server.api_base, "api_key": touch_command(marker)}
    path = hostile_file(tmp_path, state, config={"api_key": touch_command(marker)})
    with pytest.warns(SavedStateWarning, match="api_key"):
        program = Predict("q -> a").load(path)
    assert program.lm is None and "api_key" not in program.config
    with pytest.warns(SavedStateWarning, match="api_key"):
        restored = Predict("q -> a").load(path, restore_lm=True)
    assert restored.lm is not None
    restored.lm(MSG)  # even a restored LM sends without running the file's command
    assert not marker.exists()
    assert lm_server.headers[-1]["authorization"] == f"Bearer {IGNORED_KEY}"


def test_a_file_cannot_send_the_users_key_to_its_own_server(
    tmp_path: Path, lm_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the attack: env:OPENAI_API_KEY plus an api_base the file chose; also the ambient default key
    # (no api_key at all), and an all-caps literal that names the variable
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    states = [
        {"model": "openai/fake", "api_base": lm_server.api_base, "api_key": "env:OPENAI_API_KEY"},
        {"model": "openai/fake", "api_base": lm_server.api_base},
        {
            "model": "openai/fake",
            "api_base": lm_server.api_base,
            "connection": {"organization": "OPENAI_API_KEY"},
        },
    ]
    for i, state in enumerate(states):
        (tmp_path / str(i)).mkdir()
        path = hostile_file(tmp_path / str(i), state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SavedStateWarning)
            program = Predict("q -> a").load(path, restore_lm=True)
        program.lm(MSG, cache=False)
    seen = json.dumps(lm_server.headers)
    assert USER_KEY not in seen
    assert lm_server.headers[-1]["openai-organization"] == "OPENAI_API_KEY"  # a literal, not the variable


def test_the_caller_gives_the_key(tmp_path: Path, lm_server: FakeOpenAIServer) -> None:
    path = hostile_file(tmp_path, {"model": "openai/fake", "api_base": lm_server.api_base})
    program = Predict("q -> a").load(path, restore_lm=True, api_key=USER_KEY)
    program.lm(MSG)
    assert lm_server.headers[-1]["authorization"] == f"Bearer {USER_KEY}"
    # the configured LM's key is reused only for the same model at the same endpoint
    configured = sf.LM("openai/fake", api_base=lm_server.api_base, api_key="sk-configured-key-99999")
    with sf.context(lm=configured):
        again = Predict("q -> a").load(path, restore_lm=True)
    again.lm(MSG, cache=False)
    assert lm_server.headers[-1]["authorization"] == "Bearer sk-configured-key-99999"


def test_loading_never_replaces_the_configured_lm(tmp_path: Path, lm_server: FakeOpenAIServer) -> None:
    path = hostile_file(tmp_path, {"model": "openai/fake", "api_base": lm_server.api_base})
    configured = ScriptedLM(["[[ ## a ## ]]\nmine\n[[ ## completed ## ]]"])
    with sf.context(lm=configured):
        program = Predict("q -> a").load(path)
        assert program(q="x").a == "mine"
    assert program.lm is None and lm_server.requests == []


def test_only_request_parameters_are_taken_from_a_file(tmp_path: Path, lm_server: FakeOpenAIServer) -> None:
    config = {
        "temperature": 0.2,
        "base_url": "http://127.0.0.1:9/v1",
        "headers": {"X-Leak": "1"},
        "extra_headers": {"X-Leak": "1"},
        "aws_bedrock_runtime_endpoint": "http://127.0.0.1:9",
        "max_tokens": "env:HOME",
    }
    state = {
        "model": "openai/fake",
        "api_base": lm_server.api_base,
        "kwargs": {"temperature": 0.5, "custom_llm_provider": "x", "api_base": "http://127.0.0.1:9/v1"},
        "connection": {"base_url": "http://127.0.0.1:9/v1", "api_version": "2024-01-01"},
    }
    path = hostile_file(tmp_path, state, config=config)
    with pytest.warns(SavedStateWarning, match="base_url") as caught:
        program = Predict("q -> a").load(path, restore_lm=True)
    assert program.config == {"temperature": 0.2}
    assert program.lm.kwargs == {"temperature": 0.5}
    assert program.lm.api_base == lm_server.api_base
    said = " ".join(str(w.message) for w in caught)
    assert all(name in said for name in ("headers", "aws_bedrock_runtime_endpoint", "custom_llm_provider"))


def test_saved_files_carry_no_credential_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SF_ORG", "org-1")
    lm = sf.LM(
        "openai/gpt-4o-mini",
        api_key="cmd:pass show openai",
        api_base="https://user:hunter22@proxy.example/v1?key=abcd1234&region=eu",
        organization="env:SF_ORG",
        aws_secret_access_key="literal-secret",
        temperature=0.3,
    )
    program = Predict("q -> a", lm=lm, timeout=5, api_key="env:OTHER_KEY")
    text = program.save(tmp_path / "p.json").read_text()
    for leaked in (
        "cmd:",
        "env:",
        "pass show",
        "hunter22",
        "abcd1234",
        "literal-secret",
        "SF_ORG",
        "api_key",
    ):
        assert leaked not in text, leaked
    state = json.loads(text)["predictors"]["self"]["lm"]["state"]
    assert state["api_base"] == "https://proxy.example/v1?region=eu"


def test_malformed_lm_options_are_clear_errors(tmp_path: Path) -> None:
    path = hostile_file(tmp_path, {"model": "openai/fake", "num_retries": "many"})
    with pytest.raises(sf.ProgramStateError, match="num_retries"):
        Predict("q -> a").load(path, restore_lm=True)
    path = hostile_file(tmp_path, {"model": "openai/fake", "timeout": -1})
    with pytest.raises(sf.InputError, match="timeout"):
        Predict("q -> a").load(path, restore_lm=True)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("api_base", "https://proxy.example/v1\n\x1b[32mall endpoints verified\x1b[0m"),
        ("api_base", "https://proxy.example/v1\u202e1v/live"),  # a right-to-left override
        ("model", "openai/gpt-4o-mini\r\nWARNING: nothing to worry about"),
    ],
)
def test_a_saved_url_or_model_with_control_characters_is_refused_not_echoed(
    tmp_path: Path, field: str, value: str
) -> None:
    # the file's api_base is repeated in the warning about removed URL credentials: a newline or
    # an escape sequence in it forged log lines and repainted the terminal
    state: dict[str, Any] = {
        "model": "openai/gpt-4o-mini",
        "api_base": "https://proxy.example/v1",
        "api_base_credentials_removed": ["user info"],
    }
    state[field] = value
    path = hostile_file(tmp_path, state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(sf.ProgramStateError, match=f"saved LM {field} holds control") as info:
            Predict("q -> a").load(path, restore_lm=True)
    said = [str(info.value), *(str(w.message) for w in caught)]
    assert not any(ch in text for text in said for ch in "\n\r\x1b\u202e")


def test_a_saved_connection_setting_with_a_line_break_is_refused(tmp_path: Path) -> None:
    # connection settings become request headers (OpenAI-Organization, ...)
    state = {"model": "openai/gpt-4o-mini", "connection": {"organization": "org-1\r\nX-Injected: 1"}}
    with pytest.raises(sf.ProgramStateError, match="connection setting organization holds control"):
        Predict("q -> a").load(hostile_file(tmp_path, state), restore_lm=True)
