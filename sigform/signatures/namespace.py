"""Names a string signature may use without a ``types=`` mapping: sigform's own special types.

Builtins (``str``, ``list``, ...) and ``typing`` names (``Optional``, ``Literal``, ...) are known
to the type-string parser itself; this adds ``Image``, ``History``, ``ToolCalls`` and the like.
"""

from __future__ import annotations

from typing import Any

__all__ = ["signature_namespace"]



def signature_namespace(text: str | None = None) -> dict[str, Any]:
    """A fresh dict of sigform's special types by name, for resolving string signatures.

    Given the signature ``text``, only the types whose names occur in it are included: the special
    types are pydantic models built on first use, and ``"question -> answer"`` needs none of them.
    (A name found inside a longer word only loads one type too many; the result is the same.)
    """
    import sigform.types as types_pkg
    from sigform.types.names import SPECIAL_TYPE_NAMES

    names = SPECIAL_TYPE_NAMES if text is None else [name for name in SPECIAL_TYPE_NAMES if name in text]
    return {name: getattr(types_pkg, name) for name in names}
