"""Message sequences every provider accepts: the fixes litellm does not already make.

What litellm 1.110 does itself (checked against the loopback provider fakes):

* Anthropic and Bedrock: system messages go to the top-level ``system``; consecutive same-role
  turns are merged; tool results become ``tool_result``/``toolResult`` blocks in a user turn
  (merged with a following user message); a mid-conversation system message becomes a user
  "operator note"; an empty assistant text becomes a placeholder (Anthropic).
* Gemini: system messages (wherever they are) go to ``system_instruction``; roles map to
  user/model; consecutive same-role text turns are merged; tool results become
  ``function_response`` parts (in the order given: Gemini pairs them with calls by position).
* OpenAI, Mistral, Cohere: messages are passed as they are (Mistral: names dropped, empty
  assistant turns removed, content lists flattened) -- several system messages, consecutive
  same-role turns and any tool-call ids included.

What this module adds, for every provider: one system message first (all system messages
merged into it, in order); tool results in the order of their calls (position-correlating
providers need it; the rest do not mind); empty assistant turns dropped (Gemini rejects empty
text parts; Mistral's removal would otherwise leave two user turns in a row). Per provider:
Mistral gets strict user/assistant alternation (consecutive same-role turns merged, never
dropped) and tool-call ids of the 9 alphanumerics it requires (remapped consistently in calls
and results); Anthropic, Bedrock and Gemini get a user turn first when a conversation would
start with the assistant.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sigform.message import Message

CONVERSATION_START = "(The conversation so far follows.)"
_ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class ProviderRules:
    """What a provider requires beyond what litellm translates for it."""

    alternate: bool = False  # user/assistant turns must alternate: merge consecutive same-role turns
    user_first: bool = False  # the first turn after the system message must be the user's
    tool_id_pattern: str | None = None  # tool-call ids must match this (else they are remapped)
    tool_id_length: int = 0


_RULES: dict[str, ProviderRules] = {
    "mistral": ProviderRules(alternate=True, tool_id_pattern=r"[a-zA-Z0-9]{9}", tool_id_length=9),
    "anthropic": ProviderRules(user_first=True),
    "bedrock": ProviderRules(user_first=True),
    "bedrock_converse": ProviderRules(user_first=True),
    "gemini": ProviderRules(user_first=True),
    "vertex_ai": ProviderRules(user_first=True),
    "vertex_ai_beta": ProviderRules(user_first=True),
}
_GENERIC = ProviderRules()


def rules_for(provider: str | None) -> ProviderRules:
    """The rules of ``provider`` (litellm's provider name); none for unknown providers."""
    return _RULES.get(provider or "", _GENERIC)


def _empty(content: object) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return all(
            isinstance(p, dict) and p.get("type") == "text" and not str(p.get("text", "")).strip()
            for p in content
        )
    return False


def _parts(content: object) -> list[dict[str, object]]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}]


def merge_content(first: object, second: object) -> Any:
    """Two message contents as one (strings joined by a blank line; else content parts)."""
    if _empty(first):
        return second
    if _empty(second):
        return first
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _parts(first) + _parts(second)


def _hoist_system(messages: list[Message]) -> list[Message]:
    systems = [m for m in messages if m.get("role") == "system"]
    if not systems or (len(systems) == 1 and messages[0].get("role") == "system"):
        return messages
    content: Any = None
    for m in systems:
        content = merge_content(content, m.get("content"))
    head = systems[0].copy()
    head["content"] = content if content is not None else ""
    return [head, *(m for m in messages if m.get("role") != "system")]


def _order_results(messages: list[Message]) -> list[Message]:
    out = list(messages)
    i = 0
    while i < len(out):
        calls = out[i].get("tool_calls") if out[i].get("role") == "assistant" else None
        j = i + 1
        while j < len(out) and out[j].get("role") == "tool":
            j += 1
        if calls and j - i > 2:
            order = {str(c.get("id")): k for k, c in enumerate(calls)}
            block = out[i + 1 : j]
            block.sort(key=lambda m: order.get(str(m.get("tool_call_id")), len(order)))  # stable
            out[i + 1 : j] = block
        i = j
    return out


def _drop_empty_assistant(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        if m.get("role") == "assistant" and _empty(m.get("content")):
            if not m.get("tool_calls"):
                continue  # nothing said: providers reject an empty turn, and it carries no content
            if m.get("content") is not None:
                m = {**m, "content": None}
        out.append(m)
    return out


def _user_first(messages: list[Message]) -> list[Message]:
    first = next((i for i, m in enumerate(messages) if m.get("role") != "system"), None)
    if first is None or messages[first].get("role") != "assistant":
        return messages
    return [*messages[:first], {"role": "user", "content": CONVERSATION_START}, *messages[first:]]


def _mergeable(prev: Message, message: Message) -> bool:
    role = message.get("role")
    if role != prev.get("role"):
        return False
    # an assistant turn with tool calls must stay last before its results
    return role == "user" or (role == "assistant" and not prev.get("tool_calls"))


def _alternate(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        if out and _mergeable(out[-1], m):
            prev = out[-1]
            out[-1] = {**prev, **m, "content": merge_content(prev.get("content"), m.get("content"))}
            continue
        out.append(m)
    return out


def _short_id(original: str, length: int, salt: int) -> str:
    digest = int.from_bytes(hashlib.sha256(f"{salt}:{original}".encode()).digest(), "big")
    chars = []
    for _ in range(length):
        digest, k = divmod(digest, len(_ALPHANUMERIC))
        chars.append(_ALPHANUMERIC[k])
    return "".join(chars)


def _remap_tool_ids(messages: list[Message], pattern: str, length: int) -> list[Message]:
    valid = re.compile(pattern)
    ids = [str(c.get("id")) for m in messages for c in m.get("tool_calls") or ()]
    ids += [str(m["tool_call_id"]) for m in messages if m.get("role") == "tool" and "tool_call_id" in m]
    bad = [i for i in dict.fromkeys(ids) if not valid.fullmatch(i)]
    if not bad:
        return messages
    taken = set(ids) - set(bad)
    mapping: dict[str, str] = {}
    for original in bad:  # deterministic: the same id always maps to the same replacement
        salt = 0
        new = _short_id(original, length, salt)
        while new in taken:
            salt += 1
            new = _short_id(original, length, salt)
        taken.add(new)
        mapping[original] = new
    out: list[Message] = []
    for m in messages:
        if m.get("tool_calls"):
            calls = [{**c, "id": mapping.get(str(c.get("id")), c.get("id"))} for c in m["tool_calls"]]
            m = {**m, "tool_calls": calls}
        if m.get("role") == "tool" and str(m.get("tool_call_id")) in mapping:
            m = {**m, "tool_call_id": mapping[str(m["tool_call_id"])]}
        out.append(m)
    return out


def _clean(messages: Sequence[Message], rules: ProviderRules) -> bool:
    """True when no fix applies (one pass; the common case of adapter-built requests)."""
    prev = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool" or (role == "system" and i > 0):
            return False
        if role == "assistant":
            content = m.get("content")
            if not (isinstance(content, str) and content.strip()) and _empty(content):
                return False
            if m.get("tool_calls"):
                return False
            if rules.user_first and prev in (None, "system"):
                return False
        if rules.alternate and role == prev and role in ("user", "assistant"):
            return False
        prev = role
    return True


def normalise(messages: Sequence[Message], provider: str | None = None) -> list[Message]:
    """``messages`` as a sequence ``provider`` accepts once litellm has translated it (see the
    module docstring). Content is merged, never dropped (empty assistant turns aside); the input
    list and its dicts are not modified."""
    rules = rules_for(provider)
    if _clean(messages, rules):
        return list(messages)
    out = _hoist_system(list(messages))
    out = _order_results(out)
    out = _drop_empty_assistant(out)
    if rules.user_first:
        out = _user_first(out)
    if rules.alternate:
        out = _alternate(out)
    if rules.tool_id_pattern:
        out = _remap_tool_ids(out, rules.tool_id_pattern, rules.tool_id_length)
    return out
