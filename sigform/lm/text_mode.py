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
model's GGUF says whether it has a chat template (:func:`sigform.local.model_type`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from sigform.lm.response import text_of
from sigform.message import Message

__all__ = ["MODEL_TYPES", "check_model_type", "completion_params", "prompt_of"]

MODEL_TYPES = ("chat", "text")
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
    server); a response format without a schema is dropped (text completions have none)."""
    fmt = params.get("response_format")
    if fmt is None:
        return params
    out = {k: v for k, v in params.items() if k != "response_format"}
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
