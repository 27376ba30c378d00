"""Token counts and model limits: how big a request is, and how big it may be.

Counting uses litellm's tokenizer for a model when that tokenizer ships with litellm (tiktoken
encodings, the bundled Anthropic and DeepSeek tokenizers) and a fast estimate otherwise
(UTF-8 bytes / 4): litellm would download the others (Llama, Cohere) from the Hugging Face
hub, which a request path must never wait for. Media parts count a fixed amount (never
fetched). Context windows and output limits come from litellm's model map, with explicit
overrides; litellm is imported lazily, and not at all for models it cannot know.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sigform.probes import probe

MESSAGE_OVERHEAD = 4  # role and framing tokens per message (OpenAI's accounting; close for others)
MEDIA_TOKENS = 800  # one image/audio/file part: a fixed, deliberately generous guess
_DOWNLOADED_TOKENIZERS = frozenset({"cohere", "llama2", "llama3"})  # litellm fetches these from the hub


def message_text(message: Mapping[str, Any]) -> tuple[str, int]:
    """The text a message puts into the prompt and its number of media parts."""
    pieces: list[str] = []
    media = 0
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            if isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                media += 1
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        pieces.append(str(fn.get("name") or ""))
        args = fn.get("arguments")
        pieces.append(args if isinstance(args, str) else str(args))
    for key in ("tool_call_id", "name"):
        if isinstance(message.get(key), str):
            pieces.append(message[key])
    return "\n".join(pieces), media


def estimate_text(text: str) -> int:
    """A fast token estimate: UTF-8 bytes / 4, rounded up."""
    if text.isascii():
        return math.ceil(len(text) / 4)
    return math.ceil(len(text.encode("utf-8")) / 4)


def upper_bound(messages: Sequence[Mapping[str, object]]) -> int:
    """A bound no byte-level tokenizer exceeds: every token covers at least one UTF-8 byte.
    Lets the caller skip exact counting when even this bound fits."""
    total = 0
    for message in messages:
        text, media = message_text(message)
        total += (len(text) if text.isascii() else len(text.encode("utf-8"))) + MESSAGE_OVERHEAD
        total += media * MEDIA_TOKENS
    return total


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens per message for one model (``exact``: with the model's own tokenizer)."""

    model: str | None
    exact: bool
    _count_text: Callable[[str], int]

    def text(self, text: str) -> int:
        return self._count_text(text) if text else 0

    def message(self, message: Mapping[str, object]) -> int:
        """Tokens of one message: its text, tool calls, media parts and framing."""
        text, media = message_text(message)
        return self.text(text) + media * MEDIA_TOKENS + MESSAGE_OVERHEAD

    def messages(self, messages: Sequence[Mapping[str, object]]) -> list[int]:
        """Tokens of each message, in order."""
        return [self.message(m) for m in messages]

    def total(self, messages: Sequence[Mapping[str, object]], tools: object = None) -> int:
        """Tokens of a whole request (messages, plus tool definitions when given)."""
        count = sum(self.messages(messages))
        if tools:
            import json

            count += self.text(json.dumps(tools, default=str, ensure_ascii=False))
        return count


def _litellm() -> Any:
    from sigform.provider.litellm_import import import_litellm

    return import_litellm()


def _bundled_tokenizer(model: str) -> bool:
    """Whether litellm counts ``model`` with a tokenizer it has locally (no hub download)."""
    try:
        from litellm.utils import huggingface_tokenizer_kind
    except ImportError:  # another litellm version: trust only what is surely tiktoken
        return model.split("/", 1)[0] in ("openai", "azure") or model.startswith(("gpt-", "o1", "o3", "o4"))
    kind = probe(f"litellm tokenizer of {model!r}", lambda: (huggingface_tokenizer_kind(model),), None)
    return kind is not None and kind[0] not in _DOWNLOADED_TOKENIZERS


@functools.lru_cache(maxsize=256)
def _litellm_counter(model: str) -> tuple[Callable[[str], int], bool] | None:
    """litellm's counter for ``model`` and whether litellm knows the model (else its default
    encoding stands in: a better estimate than bytes / 4, but not the model's tokenizer)."""
    litellm = _litellm()
    bare = model.split("/", 1)[1] if "/" in model else model
    if not (_bundled_tokenizer(model) and _bundled_tokenizer(bare)):
        return None
    encode = functools.partial(litellm.encode, model=model, text="probe")
    encoded = probe(f"litellm token count for {model!r}", encode, None)
    if encoded is None:
        return None
    known = model in litellm.model_cost or bare in litellm.model_cost

    @functools.lru_cache(maxsize=8192)  # chat histories resend the same turns again and again
    def count(text: str) -> int:
        return len(litellm.encode(model=model, text=text))

    return count, known


def token_counter(model: str | None, *, exact: bool | None = None) -> TokenCounter:
    """A counter for ``model``: litellm's tokenizer when it has one locally, else the estimate.

    ``exact=False`` forces the estimate; ``exact=None`` (default) uses litellm only when it is
    already imported or the model names a provider (``"anthropic/..."``), so scripted and test
    models never import it.
    """
    use = exact
    if use is None:
        use = bool(model) and ("litellm" in sys.modules or "/" in (model or ""))
    if use and model:
        found = _litellm_counter(model)
        if found is not None:
            return TokenCounter(model, found[1], found[0])
    return TokenCounter(model, False, estimate_text)


@dataclass(frozen=True)
class ModelLimits:
    """A model's context window (input + output tokens) and maximum output, None when unknown."""

    context_window: int | None
    max_output: int | None


@functools.lru_cache(maxsize=256)
def _model_info(model: str) -> ModelLimits:
    litellm = _litellm()
    info = probe(f"litellm model info of {model!r}", lambda: litellm.get_model_info(model), None)
    if info is None:
        return ModelLimits(None, None)
    window = info.get("max_input_tokens") or info.get("max_tokens")
    output = info.get("max_output_tokens") or info.get("max_tokens")
    return ModelLimits(int(window) if window else None, int(output) if output else None)


def model_limits(
    model: str | None, *, context_window: int | None = None, max_output: int | None = None
) -> ModelLimits:
    """The limits of ``model`` from litellm's model map, overridden by explicit values.

    Models litellm cannot know (no provider prefix, litellm not loaded) are not looked up."""
    if context_window is not None and max_output is not None:
        return ModelLimits(context_window, max_output)
    known = ModelLimits(None, None)
    if model and ("/" in model or "litellm" in sys.modules):
        known = _model_info(model)
    return ModelLimits(
        context_window if context_window is not None else known.context_window,
        max_output if max_output is not None else known.max_output,
    )


def output_reserve(limits: ModelLimits, requested: int | None) -> int:
    """Tokens kept free for the answer: the request's ``max_tokens`` when set, else the model's
    maximum output capped at a quarter of the window (some maps list the whole window as the
    output limit), else 4096 capped the same way."""
    if requested is not None:
        return max(0, int(requested))
    window = limits.context_window or 0
    cap = window // 4 if window else 4096
    return min(limits.max_output or 4096, cap)
