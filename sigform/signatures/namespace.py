"""Names a string signature may use without a ``types=`` mapping: sigform's own special types.

Builtins (``str``, ``list``, ...) and ``typing`` names (``Optional``, ``Literal``, ...) are known
to the type-string parser itself; this adds ``Image``, ``History``, ``ToolCalls`` and the like.
"""

from __future__ import annotations

from typing import Any

__all__ = ["signature_namespace"]

_SPECIAL_TYPES = ("Image", "Audio", "File", "History", "Reasoning", "ToolCalls")


def signature_namespace() -> dict[str, Any]:
    """A fresh dict of sigform's special types by name, for resolving string signatures."""
    import sigform.types as types_pkg

    return {name: getattr(types_pkg, name) for name in _SPECIAL_TYPES if hasattr(types_pkg, name)}
