"""Integration tests against the real embedded model (Gemma 3 270M via llama_cpp.server).

They start the real server once per module in a private cache dir and keep every request small
(the machine has 2 cores). Marked ``local_model``; they need the ``local`` extra, which CI
installs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

import sigform
from sigform import local
from sigform.local import _server_registry
from sigform.local._state import pid_alive, read_state

pytestmark = pytest.mark.local_model

# litellm fetches its price list from the network at import unless told not to (tests are offline)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(sigform.__file__).resolve().parents[1]

QUESTION = (
    "[[ ## question ## ]]\n{q}\n\nRespond with the corresponding output fields, starting with the field "
    "`[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
)
MESSAGES = [
    {"role": "system", "content": (
        "Your input fields are:\n1. `question` (str)\nYour output fields are:\n1. `answer` (str)\n"
        "Answer with a short factoid."
    )},
    {"role": "user", "content": QUESTION.format(q="What is the capital of France?")},
    {"role": "assistant", "content": "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"},
    {"role": "user", "content": QUESTION.format(q="What is the capital of Italy?")},
]


def _complete(api_base: str, messages: list[dict[str, str]], **kw: Any) -> Any:
    import litellm

    return litellm.completion(
        model="openai/" + local.MODEL_NAME, api_base=api_base, api_key="local", messages=messages,
        temperature=0, num_retries=0, **kw,
    )


def _child(body: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True, timeout=300,
        env={**os.environ, **env, "PYTHONPATH": path},
    )


def test_server_answers_with_our_alias(server: str) -> None:
    import httpx

    models = httpx.get(server + "/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == [local.MODEL_NAME]
    current = local.current_server()
    assert current is not None and current.owned and current.model_path.name.endswith(".gguf")


def test_chat_adapter_style_completion_through_litellm(server: str) -> None:
    resp = _complete(server, MESSAGES, max_tokens=24, stop=["[[ ## completed ## ]]"])
    text = resp.choices[0].message.content
    assert text.startswith("[[ ## answer ## ]]")  # the base model follows the few-shot structure
    assert "[[ ## completed ## ]]" not in text
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage.prompt_tokens > 50 and 0 < resp.usage.completion_tokens <= 24


def test_litellm_params_reach_the_same_server(server: str) -> None:
    import litellm

    params = local.litellm_params()
    assert params["api_base"] == server and params["model"] == local.LITELLM_MODEL
    resp = litellm.completion(messages=[{"role": "user", "content": "Hi"}], max_tokens=3, **params)
    assert resp.usage.completion_tokens > 0


def test_reuse_in_process_starts_nothing_new(server: str) -> None:
    pid = local.current_server().pid  # type: ignore[union-attr]
    assert local.ensure_server() == server
    assert local.current_server().pid == pid  # type: ignore[union-attr]
    assert len(_server_registry._owned) == 1


def test_reuse_across_processes(server: str) -> None:
    result = _child('''
        import json
        from sigform import local
        base = local.ensure_server()
        s = local.current_server()
        print(json.dumps({"api_base": base, "pid": s.pid, "owned": s.owned}))
    ''', {})
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    current = local.current_server()
    assert current is not None
    assert seen == {"api_base": server, "pid": current.pid, "owned": False}
    assert current.is_healthy()  # the child did not stop our server at its exit


def test_owner_process_leaves_no_server_behind(tmp_path: Path, server: str) -> None:
    result = _child('''
        from sigform import local
        local.ensure_server()
        print(local.current_server().pid)
    ''', {"SIGFORM_CACHE_DIR": str(tmp_path / "own-cache")})
    assert result.returncode == 0, result.stderr
    pid = int(result.stdout)
    deadline = time.monotonic() + 20
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pid)
    assert read_state(tmp_path / "own-cache" / "local-server.json") is None


class Verdict(BaseModel):
    answer: str = Field(max_length=20)
    label: Literal["yes", "no"]


def test_json_object_with_schema_is_grammar_constrained(server: str) -> None:
    resp = _complete(
        server, [{"role": "user", "content": "Is Paris in France? Reply in JSON."}], max_tokens=60,
        response_format={"type": "json_object", "schema": Verdict.model_json_schema()},
    )
    text = resp.choices[0].message.content
    verdict = Verdict.model_validate_json(text)  # raises if the grammar did not hold
    assert verdict.label in ("yes", "no")


def test_json_schema_response_format_is_rejected(server: str) -> None:
    """llama_cpp.server only knows response_format types 'text' and 'json_object'."""
    import litellm

    with pytest.raises(litellm.InternalServerError) as info:
        _complete(
            server, [{"role": "user", "content": "Hi"}], max_tokens=5,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "v", "schema": Verdict.model_json_schema()}},
        )
    assert info.value.status_code == 500
    assert "Input should be 'text' or 'json_object'" in str(info.value)
