"""Provider prompt caching: mark the stable prefix (system message and demos) for reuse.

Providers differ (facts checked with litellm 1.110 against the loopback fakes):

* Anthropic takes ``cache_control: {"type": "ephemeral"}`` on a content block: everything up
  to and including that block (tools, system, earlier messages) is cached. litellm passes the
  key through on system and message content parts.
* Bedrock Converse takes ``cachePoint`` blocks. litellm writes one after every content part
  that carries ``cache_control`` -- but only for models its map says accept them (Claude 3.7+,
  Nova); for others it drops the marker, so marking is always safe.
* Vertex AI (Claude models) and OpenRouter (``anthropic/...`` models) take Anthropic's marker.
* OpenAI, DeepSeek, Gemini 2.5 (implicit), Mistral, Cohere and OpenAI-compatible servers cache
  automatically or not at all: they get no marker (litellm would send ``cache_control`` to
  OpenAI as it is).

One breakpoint goes on the last content block of the prefix; a message that already carries a
marker is left alone (the caller placed its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from sigform.message import Message

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
_MARKED_PROVIDERS = frozenset({"anthropic", "bedrock", "bedrock_converse"})
_CLAUDE_HOSTS = frozenset({"vertex_ai", "vertex_ai_beta", "openrouter"})


def marks_cache(provider: str | None, model: str | None = None) -> bool:
    """Whether requests to ``provider`` (and ``model``) need explicit cache markers."""
    if provider in _MARKED_PROVIDERS:
        return True
    return provider in _CLAUDE_HOSTS and "claude" in (model or "").lower()


def _has_marker(messages: Sequence[Message]) -> bool:
    for m in messages:
        if "cache_control" in m:
            return True
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content):
            return True
    return False


def _marked(message: Message) -> Message | None:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return None
        return {
            **message,
            "content": [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}],
        }
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        return {**message, "content": [*content[:-1], {**content[-1], "cache_control": dict(CACHE_CONTROL)}]}
    return None


def mark_prefix(
    messages: Sequence[Message], prefix: int, provider: str | None, model: str | None = None
) -> list[Message]:
    """``messages`` with a cache breakpoint on the last content block of the first ``prefix``
    messages, when ``provider`` takes markers (else unchanged). The input is not modified."""
    out = list(messages)
    if prefix <= 0 or not marks_cache(provider, model) or _has_marker(out):
        return out
    for index in range(min(prefix, len(out)) - 1, -1, -1):
        marked = _marked(out[index])
        if marked is not None:
            out[index] = marked
            break
    return out
