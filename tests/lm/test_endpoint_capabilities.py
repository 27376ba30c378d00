"""Structured-output abilities of unknown OpenAI-compatible endpoints: tried, stepped down on
rejection, remembered per endpoint in the process and (once a lower mode answered) in the cache
folder across processes; the file is validated as untrusted input; ``capabilities=`` overrides.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.errors import BadRequestError
from sigform.lm import capabilities
from sigform.testing.providers import ErrorReply, OpenAIChatFake, Reply
from sigform.testing.providers.server import RecordedRequest

ROOT = Path(__file__).resolve().parents[2]


def llama_cpp_like(request: RecordedRequest) -> Reply | ErrorReply:
    """Answers like llama-cpp-python's server: json_schema refused, json_object (+schema) taken."""
    fmt = request.json.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return ErrorReply(400, "response_format: Input should be 'text' or 'json_object'")
    return Reply('{"y": 4}')


def formats(fake: OpenAIChatFake) -> list[str | None]:
    out = []
    for request in fake.requests:
        fmt = request.json.get("response_format")
        out.append(None if fmt is None else fmt["type"] + ("+schema" if "schema" in fmt else ""))
    return out


def square(lm: sf.LM) -> int:
    return sf.Predict("x: int -> y: int", adapter=sf.JSONAdapter())(x=2, lm=lm).y


def test_an_unknown_server_is_asked_for_a_schema_and_steps_down_once_per_process() -> None:
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        lm = sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)
        assert square(lm) == 4
        assert square(lm) == 4
        assert formats(fake) == ["json_schema", "json_object+schema", "json_object+schema"]
        assert not lm.supports("json_schema") and lm.supports("json_object")


def test_what_answered_is_saved_and_used_by_the_next_process_without_a_rejected_call() -> None:
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        assert square(sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)) == 4
        saved = json.loads(capabilities.capabilities_path().read_text())
        key = capabilities.endpoint_key("openai/some-model", fake.api_base)
        assert saved["endpoints"][key]["best"] == "json_object_schema"
        capabilities.forget()  # a new process: nothing in memory, the file stays
        assert square(sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)) == 4
        assert formats(fake) == ["json_schema", "json_object+schema", "json_object+schema"]


def test_another_endpoint_or_model_learns_on_its_own() -> None:
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        assert square(sf.LM("openai/one", api_base=fake.api_base, api_key="k", cache=False)) == 4
        assert square(sf.LM("openai/two", api_base=fake.api_base, api_key="k", cache=False)) == 4
        other_base = fake.api_base.replace("127.0.0.1", "localhost")
        assert square(sf.LM("openai/one", api_base=other_base, api_key="k", cache=False)) == 4
    assert formats(fake) == ["json_schema", "json_object+schema"] * 3


def test_a_failure_unrelated_to_the_format_is_never_saved() -> None:
    # every request is refused (say, a wrong model name): nothing answered, so nothing is learned
    # for other processes
    with OpenAIChatFake(default=ErrorReply(400, "The model `nope` does not exist")) as fake:
        lm = sf.LM("openai/nope", api_base=fake.api_base, api_key="k", cache=False)
        with pytest.raises(BadRequestError):
            square(lm)
    assert not capabilities.capabilities_path().exists()


def test_saving_to_an_unwritable_cache_folder_costs_nothing_but_the_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setattr(capabilities, "capabilities_path", lambda: blocked / "caps.json")
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        lm = sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)
        assert square(lm) == 4 and square(lm) == 4
    assert formats(fake) == ["json_schema", "json_object+schema", "json_object+schema"]


def test_the_key_and_the_file_carry_no_credentials() -> None:
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        base = fake.api_base.replace("http://", "http://alice:hunter2@")
        lm = sf.LM("openai/some-model", api_base=base, api_key="sk-other-456", cache=False)
        assert square(lm) == 4
        port = fake.api_base.split(":")[2].split("/")[0]
    text = capabilities.capabilities_path().read_text()
    for secret in ("alice", "hunter2", "sk-other-456"):
        assert secret not in text
    assert (
        capabilities.endpoint_key("m", "https://h:8443/v1/?key=sk-secret-123#frag")
        == "m at https://h:8443/v1"
    )
    assert f"openai/some-model at http://127.0.0.1:{port}/v1" in text


def _write(payload: Any) -> None:
    path = capabilities.capabilities_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))


@pytest.mark.parametrize(
    "payload",
    [
        "not json {",
        "[]",
        {"version": 2, "endpoints": {"m at http://h/v1": {"best": "json_object", "checked": 1}}},
        {"version": 1, "endpoints": []},
        "x" * (capabilities.MAX_FILE_BYTES + 10),
        "\udcff".encode("utf-8", "surrogatepass").decode("latin-1"),
    ],
)
def test_a_malformed_file_counts_as_empty(payload: Any) -> None:
    _write(payload)
    capabilities.forget()
    assert capabilities.best_mode("m at http://h/v1") == 0


def test_each_entry_is_checked_on_its_own() -> None:
    now = time.time()
    good = {"best": "json_object", "checked": now - 60}
    _write(
        {
            "version": 1,
            "endpoints": {
                "good at http://h/v1": good,
                "unknown mode at http://h/v1": {"best": "xml_grammar", "checked": now},
                "from the future at http://h/v1": {"best": "text", "checked": now + 86400},
                "expired at http://h/v1": {"best": "text", "checked": now - capabilities.TTL_SECONDS - 5},
                "not finite at http://h/v1": {"best": "text", "checked": float("nan")},
                "bool time at http://h/v1": {"best": "text", "checked": True},
                "x" * (capabilities.MAX_KEY_CHARS + 1): {"best": "text", "checked": now},
                "not a dict at http://h/v1": "text",
            },
        }
    )
    capabilities.forget()
    assert capabilities.best_mode("good at http://h/v1") == capabilities.MODES.index("json_object")
    for key in ("unknown mode", "from the future", "expired", "not finite", "bool time", "not a dict"):
        assert capabilities.best_mode(f"{key} at http://h/v1") == 0, key


def test_the_file_keeps_the_newest_entries_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities, "MAX_ENTRIES", 3)
    for i in range(5):
        key = f"m{i} at http://h/v1"
        capabilities.record_rejected(key, "json_schema", "json_object_schema")
        capabilities.record_answered(key, "json_object_schema")
        time.sleep(0.01)
    saved = json.loads(capabilities.capabilities_path().read_text())["endpoints"]
    assert sorted(saved) == ["m2 at http://h/v1", "m3 at http://h/v1", "m4 at http://h/v1"]


def test_declared_capabilities_beat_what_another_process_saved() -> None:
    with OpenAIChatFake(default=Reply('{"y": 4}')) as fake:
        key = capabilities.endpoint_key("openai/some-model", fake.api_base)
        capabilities.record_rejected(key, "json_schema", "json_object_schema")
        capabilities.record_answered(key, "json_object_schema")
        capabilities.forget()  # only the file remembers now
        lm = sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)
        assert not lm.supports("json_schema")
        declared = lm.copy(capabilities={"json_schema": True})
        assert square(declared) == 4  # the user says it works: tried again
        refused = lm.copy(capabilities={"json_schema": False, "json_object": False})
        assert square(refused) == 4
    assert formats(fake) == ["json_schema", None]


def test_the_chat_adapters_json_fallback_asks_an_unknown_server_for_the_schema() -> None:
    replies = iter([Reply("Sure! The answer is four."), Reply('{"y": 4}')])
    with OpenAIChatFake(responder=lambda _request: next(replies)) as fake:
        lm = sf.LM("openai/some-model", api_base=fake.api_base, api_key="k", cache=False)
        assert sf.Predict("x: int -> y: int", adapter=sf.ChatAdapter())(x=2, lm=lm).y == 4
    assert formats(fake) == [None, "json_schema"]
    assert fake.requests[0].json.get("stop")  # the chat request ends at its completion marker


def test_a_second_process_reads_what_the_first_saved(tmp_path: Path) -> None:
    script = (
        "import sys, sigform as sf\n"
        "lm = sf.LM('openai/some-model', api_base=sys.argv[1], api_key='k', cache=False)\n"
        "print(sf.Predict('x: int -> y: int', adapter=sf.JSONAdapter())(x=2, lm=lm).y)\n"
    )
    env = {**os.environ, "SIGFORM_CACHE_DIR": str(tmp_path), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with OpenAIChatFake(responder=llama_cpp_like) as fake:
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", script, fake.api_base],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                timeout=120,
            )
            assert out.stdout.strip() == "4", out.stderr[-2000:]
    assert formats(fake) == ["json_schema", "json_object+schema", "json_object+schema"]
    assert (tmp_path / capabilities.FILE_NAME).is_file()
