"""Process-wide defaults and scoped overrides, safe across threads and asyncio tasks.

``configure(lm=..., adapter=...)`` sets defaults for the whole process; ``with context(...)``
overrides them for the current thread or task only (contextvars), so a batch worker or an
asyncio task inherits the settings of the code that started it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

__all__ = ["configure", "context", "current_settings", "get_setting"]

_global: dict[str, Any] = {}
_global_lock = threading.Lock()
_overrides: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "sigform_settings", default=MappingProxyType({})
)


def configure(**settings: Any) -> None:
    """Set process-wide defaults, e.g. ``configure(lm=sf.LM("openai/gpt-4o-mini"))``."""
    with _global_lock:
        _global.update(settings)


@contextmanager
def context(**settings: Any) -> Iterator[None]:
    """Override settings inside a ``with`` block for this thread/task only."""
    token = _overrides.set(MappingProxyType({**_overrides.get(), **settings}))
    try:
        yield
    finally:
        _overrides.reset(token)


def get_setting(name: str, default: Any = None) -> Any:
    """The value of ``name``: the innermost ``context`` first, then ``configure``, then ``default``."""
    scoped = _overrides.get()
    if name in scoped:
        return scoped[name]
    return _global.get(name, default)


def current_settings() -> dict[str, Any]:
    """A snapshot of every effective setting (global merged with scoped overrides)."""
    with _global_lock:
        merged = dict(_global)
    merged.update(_overrides.get())
    return merged
