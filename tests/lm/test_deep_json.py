"""JSON nested deeper than Python's parser can recurse is malformed JSON, wherever it comes from:
a server's error page, a streamed chunk, a tool call's arguments, a checkpoint row, a state file.

Before: ``[`` x 100,000 (200 KB) raised a bare ``RecursionError`` out of ``lm(...)`` on the fast
path (error page, stream chunk, tool arguments), out of a checkpoint resume, a tool's argument
decoding and the embedded model's state files; now each is what any other malformed JSON is there.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.errors import CheckpointError, ToolArgumentsError

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def hostile() -> Iterator[dict[str, Any]]:
    answer: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, kind, body = answer["reply"]
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    answer["lm"] = sf.LM("openai/m", api_base=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                         api_key="sk-t", cache=False, num_retries=0)
    yield answer
    httpd.shutdown()
    httpd.server_close()


def test_a_deep_error_page_is_a_provider_error(hostile: dict[str, Any]) -> None:
    hostile["reply"] = (500, "application/json", DEEP.encode())
    with pytest.raises(sf.ProviderError, match=r"HTTP 500"):
        hostile["lm"]("hi")


def test_a_deep_streamed_chunk_is_a_malformed_response(hostile: dict[str, Any]) -> None:
    hostile["reply"] = (200, "text/event-stream", f"data: {DEEP}\n\ndata: [DONE]\n\n".encode())
    with pytest.raises(sf.ProviderError, match="a streamed chunk is not JSON"):
        list(hostile["lm"].stream("hi"))


def test_deep_tool_arguments_stay_text(hostile: dict[str, Any]) -> None:
    import json

    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP}}
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}]}
    hostile["reply"] = (200, "application/json", json.dumps(body).encode())
    [completion] = hostile["lm"]("hi")
    assert completion.tool_calls[0].arguments == DEEP  # not a JSON object: kept as the text
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        from sigform.tools.schema import decode_arguments

        decode_arguments("f", DEEP)


def test_a_deep_checkpoint_row_is_damage_not_a_crash(tmp_path: Path) -> None:
    lm = sf.testing.ScriptedLM(["[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]"] * 4)
    program = sf.Predict("question -> answer", lm=lm)
    path = tmp_path / "run.jsonl"
    program.batch([{"question": "2+2?"}], checkpoint=path, progress=False)
    with path.open("a") as fh:
        fh.write(DEEP + "\n" + DEEP + "\n")
    with pytest.raises(CheckpointError, match="not JSON; the checkpoint is damaged"):
        program.batch([{"question": "2+2?"}], checkpoint=path, progress=False)


def test_deep_state_files_are_unreadable_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sigform.lm import capabilities
    from sigform.local import _state

    deep = "[" * 5_000 + "]" * 5_000  # small enough for the files' size caps
    (tmp_path / "state.json").write_text(deep)
    assert _state.read_state(tmp_path / "state.json") is None
    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path))
    (tmp_path / capabilities.FILE_NAME).write_text(deep)
    capabilities.forget()
    assert capabilities.best_mode("openai/m at http://127.0.0.1:1/v1") == 0  # nothing known
