"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package lists ``{public name: defining module}``; the defining module is imported on the first
attribute access, so importing the package stays cheap (``import sigform`` never loads litellm,
and a program that only uses ``ChatAdapter`` never loads the XML adapter).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    submodules: Collection[str] = (),
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` serving ``exports`` lazily.

    ``submodules`` names subpackages reachable as attributes (``sigform.local``) without an
    explicit import. Each resolved name is stored in ``namespace``, so later lookups are plain
    global reads.
    """

    def __getattr__(name: str) -> object:
        module_name = exports.get(name)
        if module_name is None:
            if name in submodules:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
