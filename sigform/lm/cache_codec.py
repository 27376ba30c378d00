"""Cached completions as data: JSON bytes in, checked :class:`Completion` values out.

The disk cache is a file anyone with access to the folder can write, so a stored value is read
as untrusted data: a versioned JSON document validated field by field against the
:class:`Completion` dataclass (pydantic, strict), never pickle. Anything else -- an entry from an
older sigform (pickled), a truncated or edited value -- is refused with :class:`CacheEntryError`
and treated as a miss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform import excerpt
from sigform.errors import CacheEntryError
from sigform.lm.interface import Completion

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["CacheEntryError", "decode", "encode"]

_MAGIC = b"sigform-completions/1\n"
_MAX_TOKENS = 1 << 53  # far beyond any request's, still exact as a float
_MAX_COST = 1e12
_adapter: TypeAdapter[list[Completion]] | None = None


def _completions() -> TypeAdapter[list[Completion]]:
    """The ``list[Completion]`` validator (built on first use: pydantic costs ~0.1 s to import)."""
    global _adapter
    if _adapter is None:
        import pydantic

        # NaN and infinities (in logprobs) kept as such, not written as null
        config = pydantic.ConfigDict(ser_json_inf_nan="constants")
        _adapter = pydantic.TypeAdapter(list[Completion], config=config)
    return _adapter


def encode(completions: list[Completion]) -> bytes:
    """The JSON bytes of ``completions`` (ValueError/TypeError when a value is not JSON data)."""
    import pydantic_core

    try:
        return _MAGIC + _completions().dump_json(completions)
    except pydantic_core.PydanticSerializationError as exc:
        raise ValueError(str(exc)) from None


def decode(blob: object) -> list[Completion]:
    """The completions stored in ``blob`` (fresh objects), or :class:`CacheEntryError`."""
    if isinstance(blob, memoryview):
        blob = bytes(blob)
    if not isinstance(blob, bytes) or not blob.startswith(_MAGIC):
        raise CacheEntryError("not a sigform cache entry (an older pickled entry, or foreign data)")
    try:
        completions = _completions().validate_json(blob[len(_MAGIC):], strict=True)
    except ValueError as exc:  # pydantic's ValidationError, nesting past its limit included
        raise CacheEntryError(f"entry is not a list of completions ({exc.__class__.__name__})") from None
    if not completions:
        raise CacheEntryError("entry is an empty list of completions")
    for completion in completions:
        usage = completion.usage
        # hits are counted in usage totals (track_usage, budgets): a negative, absurd or NaN
        # figure would corrupt them (a NaN cost passes every budget check)
        counts = (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens, usage.cached_tokens)
        if not all(0 <= n <= _MAX_TOKENS for n in counts):
            raise CacheEntryError(f"entry has token counts out of range ({excerpt.shorten(str(counts))})")
        if usage.cost is not None and not 0 <= usage.cost <= _MAX_COST:
            raise CacheEntryError(f"entry has a cost out of range ({usage.cost!r})")
    return completions
