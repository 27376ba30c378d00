"""Whether a server sigform did not start serves a base model (text mode) and takes a GBNF
grammar, asked once per endpoint (sigform.lm.text_mode.server_facts) and remembered."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sigform.lm import LM, capabilities, text_mode
from sigform.lm.text_mode import server_facts  # the real one (conftest stubs it out)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
FORMAT = {"type": "json_object", "schema": SCHEMA}


class FakeServer:
    """A loopback server answering ``routes[(method, path)]`` as JSON (404 elsewhere), and
    text completions on ``POST /v1/completions``; every request is recorded."""

    def __init__(self, routes: dict[tuple[str, str], Any]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, method: str) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size)) if size else None
                fake.seen.append((method, self.path, body))
                if (method, self.path) == ("POST", "/v1/completions"):
                    reply: Any = {
                        "choices": [{"text": ' {"city": "Oslo"}', "index": 0, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
                    }
                elif (method, self.path) in fake.routes:
                    reply = fake.routes[(method, self.path)]
                else:
                    self.send_error(404)
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.api_base = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def probes(self) -> list[str]:
        return [path for _, path, _ in self.seen if path != "/v1/completions"]

    def completion_body(self) -> Any:
        return next(body for _, path, body in self.seen if path == "/v1/completions")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def models(owner: str, name: str = "m") -> dict[str, Any]:
    return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": owner}]}


@pytest.fixture(autouse=True)
def _real_probe(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    monkeypatch.setattr(text_mode, "server_facts", server_facts)


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Start a fake server that listens where such servers do by default (``default_port``)."""
    servers: list[FakeServer] = []

    def start(routes: dict[tuple[str, str], Any], default_port: bool = True) -> FakeServer:
        servers.append(FakeServer(routes))
        if default_port:
            port = servers[-1].httpd.server_address[1]
            monkeypatch.setattr(text_mode, "SERVER_PORTS", (*text_mode.SERVER_PORTS, port))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def lm_at(server: FakeServer, **options: Any) -> LM:
    return LM("openai/m", api_base=server.api_base, api_key="k", cache=False, **options)


def test_a_llama_server_with_an_empty_chat_template_serves_a_base_model(serve: Any) -> None:
    server = serve({("GET", "/v1/models"): models("llamacpp"), ("GET", "/props"): {"chat_template": ""}})
    lm = lm_at(server)
    assert lm.model_type == "text"
    assert lm("Text: I live in Oslo.\nJSON:", response_format=FORMAT)[0].text == ' {"city": "Oslo"}'
    body = server.completion_body()
    assert body["json_schema"] == SCHEMA and "grammar" not in body  # llama-server's own field
    assert server.probes() == ["/v1/models", "/props"]


def test_a_llama_server_with_a_chat_template_stays_on_chat(serve: Any) -> None:
    template = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"
    server = serve(
        {("GET", "/v1/models"): models("llamacpp"), ("GET", "/props"): {"chat_template": template}}
    )
    assert lm_at(server).model_type == "chat"


def test_a_llama_cpp_python_server_gets_the_grammar_it_understands(serve: Any) -> None:
    server = serve({("GET", "/v1/models"): models("me")}, default_port=False)
    assert lm_at(server).model_type == "chat" and server.seen == []  # not asked: any server could be here
    lm = lm_at(server, model_type="text")
    lm("Text: I live in Oslo.\nJSON:", response_format=FORMAT)
    body = server.completion_body()
    assert "json_schema" not in body and '"\\"city\\""' in body["grammar"]


@pytest.mark.parametrize(
    ("template", "mode"),
    [("{{ .Prompt }}", "text"), ("", "text"), ("{{ .System }} USER: {{ .Prompt }}", "chat")],
)
def test_ollama_says_whether_its_model_has_a_template(serve: Any, template: str, mode: str) -> None:
    shown = {"template": template, "details": {"family": "gemma3"}}
    server = serve({("GET", "/v1/models"): models("library"), ("POST", "/api/show"): shown})
    assert lm_at(server).model_type == mode
    assert ("POST", "/api/show", {"model": "m"}) in server.seen


def test_the_answer_is_remembered_across_lms_and_processes(serve: Any) -> None:
    server = serve({("GET", "/v1/models"): models("llamacpp"), ("GET", "/props"): {"chat_template": ""}})
    assert lm_at(server).model_type == "text"
    assert lm_at(server).model_type == "text"
    capabilities.forget()  # another process: only the file is left
    assert lm_at(server).model_type == "text"
    assert server.probes() == ["/v1/models", "/props"]
    saved = json.loads(capabilities.capabilities_path().read_text())["servers"]
    assert next(iter(saved.values()))["model_type"] == "text"


def test_an_unknown_server_is_chat_and_a_declared_chat_model_is_never_probed(serve: Any) -> None:
    server = serve({("GET", "/v1/models"): models("vllm")})
    assert lm_at(server).model_type == "chat"
    assert server.probes() == ["/v1/models"]
    other = serve({("GET", "/v1/models"): models("llamacpp"), ("GET", "/props"): {"chat_template": ""}})
    lm = lm_at(other, model_type="chat")
    assert lm.model_type == "chat" and lm.provider == "openai"  # the route is resolved
    assert other.seen == []


def test_a_hostile_file_entry_is_ignored(serve: Any) -> None:
    server = serve({("GET", "/v1/models"): models("vllm")})
    key = capabilities.endpoint_key("openai/m", server.api_base)
    path = capabilities.capabilities_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    bad = {"model_type": "text", "grammar": 1, "checked": time.time()}  # 1 is not a bool
    path.write_text(json.dumps({"version": 1, "servers": {key: bad}}))
    capabilities.forget()
    assert lm_at(server).model_type == "chat"
    assert server.probes() == ["/v1/models"]
