"""Saved demo selectors: which selector kinds a saved program may name, and how each is rebuilt.

A predictor's ``demo_selector`` (e.g. :class:`sigform.optimize.KNNDemos`) picks demos per call
and is saved with the program under a ``"kind"``. The selector classes live above this layer
(in optimize), so loading cannot import them; instead each kind's loader is registered here by
code: sigform's own kinds by the root package when it is imported (see ``sigform/__init__.py``),
which happens before any submodule runs, so a fresh process can load them too.

A program file is untrusted: its ``"kind"`` only picks one of the loaders registered here, and only
kinds in :data:`SIGFORM_KINDS` can be registered. Nothing the file names is imported or run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sigform.errors import ProgramStateError

if TYPE_CHECKING:  # the root package imports this module: keep that import small
    from sigform.predict.example import Example

__all__ = ["SIGFORM_KINDS", "SelectorLoader", "register_selector_kind", "selector_loader"]

# (saved settings, rebuilt pool, where in the file, may it name a model?, the loader's api_key or
# None) -> the selector
SelectorLoader = Callable[[Mapping[str, Any], "list[Example]", str, bool, Any], Any]

# the only kinds a saved program may name: sigform's own selectors
SIGFORM_KINDS = frozenset({"knn"})

_LOADERS: dict[str, SelectorLoader] = {}


def register_selector_kind(kind: str, loader: SelectorLoader) -> None:
    """Make saved selectors of ``kind`` loadable (for sigform's own kinds only)."""
    if kind not in SIGFORM_KINDS:
        raise ValueError(
            f"demo selector kind {kind!r} is not one of sigform's own ({', '.join(sorted(SIGFORM_KINDS))}): "
            "a saved program may only name those"
        )
    _LOADERS[kind] = loader


def selector_loader(kind: object, where: str) -> SelectorLoader:
    """The loader for a saved selector's ``kind``, or a :class:`ProgramStateError`."""
    loader = _LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        known = ", ".join(repr(k) for k in sorted(_LOADERS)) or "none"
        raise ProgramStateError(f"{where}: unknown demo selector kind {kind!r} (known kinds: {known})")
    return loader
