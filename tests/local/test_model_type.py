"""The embedded model's mode: its GGUF has no chat template, so it is a text model; the answer is
read once per file version and kept next to the file; a server of another process's knowledge,
or a file that cannot be read, is not known (chat)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sigform.local import _model, _server_registry


def test_a_kept_answer_is_used_while_the_file_is_unchanged(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF not a real model")
    record = tmp_path / "m.gguf.model-type.json"
    record.write_text(json.dumps({"file": _model._fingerprint(gguf), "type": "text"}))
    assert _model.model_type_of(gguf) == "text"
    gguf.write_bytes(b"GGUF another version of the file")  # changed: the record no longer applies
    with pytest.raises(Exception):  # noqa: B017 - llama-cpp-python cannot read the fake file
        _model.model_type_of(gguf)


def test_the_metadata_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    metas = iter([{"general.name": "base"}, {"tokenizer.chat_template": "{{ messages }}"}])

    def fake_llama(**kw: Any) -> Any:
        assert kw["vocab_only"] is True  # never the weights
        return SimpleNamespace(metadata=next(metas))

    monkeypatch.setattr(llama_cpp, "Llama", fake_llama)
    assert _model.model_type_of(gguf) == "text"
    gguf.write_bytes(b"GGUF2")
    assert _model.model_type_of(gguf) == "chat"
    assert _model.model_type_of(gguf) == "chat"  # kept: the metadata was not read a third time


def test_only_known_servers_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    (tmp_path / "m.gguf.model-type.json").write_text(
        json.dumps({"file": _model._fingerprint(gguf), "type": "text"})
    )
    server = SimpleNamespace(api_base="http://127.0.0.1:5555/v1", model_path=gguf)
    monkeypatch.setattr(_server_registry, "_current", server)
    assert _server_registry.model_type() == "text"
    assert _server_registry.model_type("http://127.0.0.1:5555/v1/") == "text"
    assert _server_registry.model_type("http://127.0.0.1:6666/v1") is None
    server.model_path = tmp_path / "missing.gguf"
    assert _server_registry.model_type() is None  # unreadable: not known


def test_a_fifo_in_place_of_the_record_hangs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import threading

    llama_cpp = pytest.importorskip("llama_cpp")
    monkeypatch.setattr(llama_cpp, "Llama", lambda **kw: SimpleNamespace(metadata={}))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    record = tmp_path / "m.gguf.model-type.json"
    os.mkfifo(record)
    answers: list[str] = []
    reader = threading.Thread(target=lambda: answers.append(_model.model_type_of(gguf)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # stuck opening the FIFO: give it a writer so the thread can end
        os.close(os.open(record, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=5)
        pytest.fail("model_type_of waited on a FIFO named like its record")
    assert answers == ["text"]
    assert json.loads(record.read_text())["type"] == "text"  # the FIFO was replaced by the record
