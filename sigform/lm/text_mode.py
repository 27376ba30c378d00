"""Text-completion mode: how an LM talks to a model without a chat template (a base model).

A pretrained base model was never trained on chat turns: sent through a chat template it
answers worse than when it continues a plain document. An LM whose :attr:`~sigform.LM.model_type`
is ``"text"`` sends every request to the text-completion endpoint (``/v1/completions`` on
OpenAI-compatible servers, litellm's ``text_completion`` elsewhere) with a ``prompt``:

* the adapters write such a request as one plain-text few-shot document, sent as one user
  message (see :meth:`sigform.adapters.formatting.PromptWriter.document`); its text is the
  prompt, as written;
* any other conversation (a call like ``lm([...])`` with several turns, a re-ask) is written as
  plain text turns (:func:`prompt_of`).

A JSON-schema response format has no place in a text-completion request: it becomes the
server's own constraint (:func:`completion_params`), a GBNF ``grammar`` for llama-cpp-python's
server (the embedded model's) and ``json_schema`` for llama.cpp's ``llama-server``.

The mode is the user's (``LM(..., model_type="text" | "chat")``) or detected: the embedded
model's GGUF says whether it has a chat template (:func:`sigform.local.model_type`); another
OpenAI-compatible server is asked once what it is (:func:`server_facts`, remembered per endpoint
like the structured-output abilities in :mod:`sigform.lm.capabilities`):

* llama.cpp's ``llama-server`` (``/v1/models`` says ``owned_by: "llamacpp"``): its ``/props``
  carry the model's ``chat_template``; an empty one is a base model (text mode);
* Ollama (``owned_by: "library"``, or its port 11434): ``/api/show`` gives the model's template;
  none, or the bare ``{{ .Prompt }}``, is a base model;
* llama-cpp-python's server (``owned_by: "me"``) does not say whether its model has a chat
  template, but it takes a GBNF ``grammar``, which it gets in text mode (it ignores
  ``json_schema``).

Anything else (no answer, another server) is not known: chat, unless ``model_type`` says otherwise.
A server is asked only at those servers' default ports (:data:`SERVER_PORTS`) or when the user
declared a text model (then: which constraint does it take?). The probes carry no credentials
and wait at most :data:`PROBE_TIMEOUT` seconds each.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from sigform.lm.response import text_of
from sigform.message import Message

MODEL_TYPES = ("chat", "text")
PROBE_TIMEOUT = 2.0
# the default ports of llama.cpp's llama-server, llama-cpp-python's server and Ollama
SERVER_PORTS = (8080, 8000, 11434)
_MAX_PROBE_BYTES = 256 * 1024
_OLLAMA_PORT = 11434
# an Ollama model's template when it has none of its own: the prompt, as written
_BARE_TEMPLATES = ("", "{{ .Prompt }}")
_ROLE_LABELS = {"system": "", "user": "", "assistant": "", "tool": "Tool result: "}


def check_model_type(value: Any) -> str | None:
    """``value`` if it is a model type (or None: detect); else a ValueError saying what to pass."""
    if value is None or value in MODEL_TYPES:
        return value  # type: ignore[no-any-return]
    raise ValueError(
        f"model_type must be 'chat' (the model has a chat template), 'text' (a base model: "
        f"requests go to text completions) or None (detect), got {value!r}"
    )


def prompt_of(messages: list[Message]) -> str:
    """The prompt of a text-mode request: the text of a lone message as written (an adapter's
    completion document), or the turns of a conversation one after another, separated by blank
    lines."""
    if len(messages) == 1:
        return text_of(messages[0].get("content"))
    parts = []
    for message in messages:
        text = text_of(message.get("content")).strip()
        if text:
            parts.append(_ROLE_LABELS.get(str(message.get("role")), "") + text)
    return "\n\n".join(parts)


def completion_params(params: dict[str, Any], grammar: bool) -> dict[str, Any]:
    """``params`` for a text-completion request: a response format carrying a JSON schema becomes
    ``grammar`` (GBNF, when ``grammar``: llama-cpp-python's server) or ``json_schema`` (llama.cpp's
    server); a response format without a schema is dropped (text completions have none).

    llama-cpp-python's server penalises repeated tokens by default (``repeat_penalty`` 1.1, where
    llama.cpp's own server uses 1.0): extraction is copying from the input, so a text request to
    it asks for 1.0 unless the caller set one (dev split of the real-model suite: 33% -> 50% of
    the examples right, every task better)."""
    fmt = params.get("response_format")
    if fmt is None:
        return {"repeat_penalty": 1.0, **params} if grammar else params
    out = {k: v for k, v in params.items() if k != "response_format"}
    if grammar:
        out.setdefault("repeat_penalty", 1.0)
    schema = _schema_of(fmt)
    if schema is not None:
        if grammar:
            # the schema's own property order: the grammar writes the fields in the order the
            # demos show them (sorted keys made the model write `currency` before `vendor`)
            out["grammar"] = gbnf_of(json.dumps(schema))
        else:
            out["json_schema"] = schema
    return out


def _schema_of(fmt: Any) -> Any:
    if not isinstance(fmt, Mapping):
        return None
    if fmt.get("type") == "json_schema":
        inner = fmt.get("json_schema")
        return inner.get("schema") if isinstance(inner, Mapping) else None
    return fmt.get("schema")


@functools.lru_cache(maxsize=64)
def gbnf_of(schema_json: str) -> str:
    """The GBNF grammar of a JSON schema, by llama-cpp-python's converter (the server it suits
    ships it)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    # the object may follow a space, as a document's record writes it (`JSON: {...}`)
    grammar = str(json_schema_to_gbnf(schema_json)).replace("root ::=", "value-root ::=", 1)
    return f'root ::= " "? value-root\n{grammar}'


def server_facts(model: str, api_base: str, *, text: bool = False) -> dict[str, Any]:
    """What the OpenAI-compatible server at ``api_base`` says about ``model``:
    ``{"model_type": "text" | "chat" | None, "grammar": bool}`` (``grammar``: it takes a GBNF
    ``grammar`` on text completions). Asked once per endpoint, then remembered (see the module
    docstring); asked only when the model was declared a text model (``text``: which constraint
    does its server take?) or the server listens on one of :data:`SERVER_PORTS`, where such
    servers listen by default (any other server would see a request it did not expect)."""
    from sigform.lm import capabilities

    key = capabilities.endpoint_key(model, api_base)
    facts = capabilities.server_facts(key)
    if facts is None:
        if not text and _port(api_base) not in SERVER_PORTS:
            return {"model_type": None, "grammar": False}
        facts = probe_server(model.partition("/")[2] or model, api_base)
        capabilities.record_server(key, facts)
    return facts


def _port(api_base: str) -> int | None:
    from sigform.lm.credentials import split_url

    try:
        return split_url(api_base).port
    except ValueError:
        return None


def probe_server(name: str, api_base: str) -> dict[str, Any]:
    """Ask the server at ``api_base`` what it is (see the module docstring); ``name`` is the
    model's name on that server."""
    from sigform.lm.connection_errors import shown_url

    unknown: dict[str, Any] = {"model_type": None, "grammar": False}
    base = (shown_url(api_base) or "").rstrip("/")  # no user info or query: never sent along
    if not base.startswith(("http://", "https://")):
        return unknown
    root = base.removesuffix("/v1")  # the server's own routes sit beside its OpenAI-compatible ones
    listing = _fetch_json(base + "/models")
    entries = listing.get("data") if isinstance(listing, dict) else None
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    entry = next((e for e in entries if e.get("id") == name), entries[0] if entries else {})
    owner = entry.get("owned_by")
    if owner == "me":  # llama-cpp-python's server
        return {**unknown, "grammar": True}
    if owner == "llamacpp":  # llama.cpp's llama-server
        props = _fetch_json(root + "/props")
        template = props.get("chat_template") if isinstance(props, dict) else None
        if isinstance(template, str):
            return {**unknown, "model_type": "chat" if template.strip() else "text"}
        return unknown
    if owner == "library" or _port(api_base) == _OLLAMA_PORT:  # Ollama
        shown = _fetch_json(root + "/api/show", {"model": name})
        if isinstance(shown, dict) and ("template" in shown or "details" in shown):  # a model's info
            template = shown.get("template") or ""
            if isinstance(template, str):
                return {**unknown, "model_type": "text" if template.strip() in _BARE_TEMPLATES else "chat"}
    return unknown


def _fetch_json(url: str, body: Any = None) -> Any:
    """The JSON a GET (or, with ``body``, a POST) of ``url`` answers, or None (no answer, an
    error status, a redirect, too large, not JSON or nested too deep).

    The whole exchange takes at most :data:`PROBE_TIMEOUT` seconds, headers included: a server
    answering a byte at a time is cut off then (a timeout per read let it hold the first call
    for hours). A redirect is not followed: another server's answer never decides how this one
    is spoken to. The connection is direct (the servers asked are usually on this machine)."""
    import http.client  # here: asked once per endpoint, never on import
    import time

    from sigform.lm.credentials import split_url
    from sigform.lm.http11 import send

    try:
        parts = split_url(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return None
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        import ssl

        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=PROBE_TIMEOUT, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=PROBE_TIMEOUT)
    data = None if body is None else json.dumps(body).encode()
    try:  # every read, headers included, ends by the deadline (http11's reader)
        reply, _ = send(conn, url, target or "/", {"Content-Type": "application/json"}, data,
                        PROBE_TIMEOUT, time.monotonic() + PROBE_TIMEOUT, "GET" if data is None else "POST")
        if reply.status != 200:
            return None
        raw = reply.read(_MAX_PROBE_BYTES + 1)
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    if len(raw) > _MAX_PROBE_BYTES:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: `[` x 200,000
        return None
