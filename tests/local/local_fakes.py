"""A fake ``llama_cpp`` package for the local-server tests (no real model, any CPU).

Written to a temp dir put first on PYTHONPATH, it is run through sigform's real launcher and
command line. It provides what sigform touches:

* ``llama_cpp.llama_cpp.llama_model_default_params()`` (wrapped by the launcher's safe CPU mode),
* ``llama_cpp.Llama`` (used by the CPU check's child),
* ``llama_cpp.server`` answering ``/v1/models`` (and ``/v1/chat/completions``) like the real server,
  honouring $HOST/$PORT like uvicorn.

Behaviour is picked by environment variables: ``FAKE_LLAMA_MODE`` = ``ok`` | ``crash`` (exit 3 at
start) | ``hang``; ``FAKE_CPU`` = ``ok`` | ``amx`` (any computation with the default
``use_extra_bufts=True`` dies with SIGSEGV, as on the AMX machines of issue 12) | ``broken`` (every
computation dies with SIGSEGV, whatever the settings).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sigform
from sigform.local import _server_registry

REPO_ROOT = Path(sigform.__file__).resolve().parents[1]

FAKE_LOW_LEVEL = '''
import types
def llama_model_default_params():
    return types.SimpleNamespace(use_extra_bufts=True)
'''

FAKE_INIT = '''
import ctypes, os
from llama_cpp import llama_cpp as _low

def compute_or_crash():
    """Die like a CPU that faults on the path these settings select."""
    cpu = os.environ.get("FAKE_CPU", "ok")
    if cpu == "broken" or (cpu == "amx" and _low.llama_model_default_params().use_extra_bufts):
        print("fake: faulting instruction", flush=True)
        ctypes.string_at(0)  # a real SIGSEGV in this thread, as the tile instruction causes

class Llama:
    def __init__(self, model_path, **kwargs):
        self.model_path = model_path
    def create_completion(self, prompt, **kwargs):
        compute_or_crash()
        return {"choices": [{"text": " ok"}]}
'''

FAKE_SERVER = '''
import argparse, http.server, json, os, sys, time
import llama_cpp
from llama_cpp import llama_cpp as low
parser = argparse.ArgumentParser()
for name in ("model", "model_alias", "host", "port", "chat_format", "n_ctx", "n_threads", "n_threads_batch",
             "n_batch", "logits_all"):
    parser.add_argument("--" + name)
args = parser.parse_args()
print("FAKE ARGS " + json.dumps(vars(args)), flush=True)
print("FAKE PARAMS " + json.dumps(vars(low.llama_model_default_params())), flush=True)
shown = ("OMP_WAIT_POLICY", "SIGFORM_LOCAL_PARENT_PID", "HOST", "PORT", "CONFIG_FILE")
print("FAKE ENV " + json.dumps({k: os.environ[k] for k in shown if k in os.environ}), flush=True)
mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
if mode == "crash":
    print("fake crash: bad model file", flush=True)
    sys.exit(3)
if mode == "hang":
    time.sleep(3600)

class Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        models = {"object": "list", "data": [{"id": args.model_alias, "object": "model"}]}
        self._send(200 if self.path == "/v1/models" else 404, models)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        llama_cpp.compute_or_crash()
        self._send(200, {
            "id": "fake", "object": "chat.completion", "created": 0, "model": args.model_alias,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "fake answer"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        })
    def log_message(self, *a):
        pass

try:  # like uvicorn, $HOST and $PORT win over the arguments
    server = http.server.ThreadingHTTPServer(
        (os.getenv("HOST", args.host), int(os.getenv("PORT", args.port))), Handler)
except OSError as exc:
    print(f"ERROR: [Errno {exc.errno}] error while attempting to bind on address: {exc.strerror.lower()}",
          flush=True)
    sys.exit(1)
server.serve_forever()
'''


def install_fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Put the fake ``llama_cpp`` first on the children's PYTHONPATH, isolate the cache dir, point
    the shared server at a fake model file and reset its process-wide state. Returns the cache dir."""
    pkg = tmp_path / "fakepkgs" / "llama_cpp"
    (pkg / "server").mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_INIT)
    (pkg / "llama_cpp.py").write_text(FAKE_LOW_LEVEL)
    (pkg / "server" / "__init__.py").write_text("")
    (pkg / "server" / "__main__.py").write_text(FAKE_SERVER)
    path_entries = [str(tmp_path / "fakepkgs"), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path_entries if p))
    monkeypatch.delenv("FAKE_CPU", raising=False)
    monkeypatch.delenv("FAKE_LLAMA_MODE", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(cache))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF fake")
    monkeypatch.setattr(_server_registry, "require_local_extra", lambda: None)
    monkeypatch.setattr(_server_registry, "ensure_model", lambda: model)
    monkeypatch.setattr(_server_registry, "default_model_path", lambda: model)
    monkeypatch.setattr(_server_registry, "_current", None)
    monkeypatch.setattr(_server_registry, "_restarts", 0)
    monkeypatch.setattr(_server_registry, "_force_safe", False)
    monkeypatch.setattr(_server_registry, "_owned", [])
    return cache
