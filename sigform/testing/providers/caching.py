"""Prompt-cache billing for the Anthropic and Bedrock fakes: a responder that reads the cache
breakpoints of each request and reports cached tokens the way the provider would.

The prompt is read in the provider's cache order (tools, system, messages) as a list of
blocks; everything up to the last breakpoint (a block with ``cache_control`` on Anthropic, a
``cachePoint`` block on Bedrock) is the cacheable prefix. The first request with a given
prefix writes it to the cache (``cache_write_tokens``), later ones read it (``cached_tokens``);
prefixes under ``min_tokens`` are not cached, as on the real APIs. Tokens are counted as
``ceil(characters / 4)`` of each block's JSON::

    billing = PromptCacheBilling()
    with AnthropicFake(responder=billing) as fake:
        ...
    billing.billed()   # input tokens as billed: fresh + 1.25 x written + 0.1 x read
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from typing import Any

from sigform.testing.providers.replies import Reply, Usage
from sigform.testing.providers.server import RecordedRequest

__all__ = ["PromptCacheBilling"]


def _tokens(block: object) -> int:
    return math.ceil(len(json.dumps(block, sort_keys=True, separators=(",", ":"))) / 4)


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[object, bool]]:
    blocks: list[tuple[object, bool]] = [(t, "cache_control" in t) for t in body.get("tools") or ()]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append((system, False))
    for block in system if isinstance(system, list) else ():
        blocks.append((block, "cache_control" in block))
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, str):
            blocks.append(({"role": message.get("role"), "text": content}, False))
            continue
        for block in content or ():
            blocks.append(({"role": message.get("role"), **block}, "cache_control" in block))
    return blocks


def _bedrock_blocks(body: dict[str, Any]) -> list[tuple[object, bool]]:
    blocks: list[tuple[object, bool]] = []
    for tool in (body.get("toolConfig") or {}).get("tools") or ():
        blocks.append((tool, "cachePoint" in tool))
    for block in body.get("system") or ():
        blocks.append((block, "cachePoint" in block))
    for message in body.get("messages") or ():
        for block in message.get("content") or ():
            blocks.append(({"role": message.get("role"), **block}, "cachePoint" in block))
    return blocks


class PromptCacheBilling:
    """A fake-provider responder that bills prompt caching (Anthropic and Bedrock bodies).

    Args:
        text: the reply text of every answer.
        completion_tokens: output tokens reported per answer.
        min_tokens: the smallest prefix the provider caches (1024 for most Claude models).
    """

    def __init__(self, text: str = "ok", *, completion_tokens: int = 5, min_tokens: int = 1024) -> None:
        self.text = text
        self.completion_tokens = completion_tokens
        self.min_tokens = min_tokens
        self.fresh_tokens = 0
        self.read_tokens = 0
        self.write_tokens = 0
        self.requests = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json
        blocks = _bedrock_blocks(body) if "/model/" in request.path else _anthropic_blocks(body)
        sizes = [_tokens(b) for b, _ in blocks]
        total = sum(sizes)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        read = write = 0
        if marks:
            end = marks[-1] + 1
            prefix = sum(sizes[:end])
            if prefix >= self.min_tokens:
                key = hashlib.sha256(
                    json.dumps([b for b, _ in blocks[:end]], sort_keys=True).encode()
                ).hexdigest()
                with self._lock:
                    if key in self._seen:
                        read = prefix
                    else:
                        self._seen.add(key)
                        write = prefix
        with self._lock:
            self.requests += 1
            self.fresh_tokens += total - read - write
            self.read_tokens += read
            self.write_tokens += write
        usage = Usage(prompt_tokens=total, completion_tokens=self.completion_tokens, cached_tokens=read)
        return Reply(self.text, usage=usage, cache_write_tokens=write)

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token sent (fresh, written and read)."""
        return self.fresh_tokens + self.read_tokens + self.write_tokens

    def billed(self, *, write_rate: float = 1.25, read_rate: float = 0.1) -> float:
        """Prompt tokens as billed: fresh at 1, cache writes at ``write_rate``, reads at ``read_rate``
        (Anthropic's 5-minute cache prices)."""
        return self.fresh_tokens + write_rate * self.write_tokens + read_rate * self.read_tokens
