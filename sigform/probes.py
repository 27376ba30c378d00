"""Probes: questions whose failure means "not known", never an error.

Some questions sigform asks may fail in ways nobody documents: litellm's model tables, an SDK's
internals, IPython's shell, pydantic on an exotic type, a user's ``__eq__`` or metric. Any
exception then means "not known" and the caller's ``default`` is used, the way a missing entry
would be. Such a failure is logged at debug level on the ``sigform.probes`` logger (turn it on
with ``logging.getLogger("sigform.probes").setLevel(logging.DEBUG)`` to see why a capability was
not detected). Only what was asked and the exception's *type* are logged, never its message: a
probe cannot know what the message holds (a URL with a key, a user's value).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

__all__ = ["probe"]

logger = logging.getLogger("sigform.probes")

T = TypeVar("T")
D = TypeVar("D")


def probe(question: str, ask: Callable[[], T], default: D) -> T | D:
    """``ask()``, or ``default`` when it raises any :class:`Exception` (logged at debug level as
    ``question``, with the exception's type). ``KeyboardInterrupt`` and ``SystemExit`` propagate."""
    try:
        return ask()
    except Exception as exc:
        logger.debug("%s: not known (%s raised); using %r", question, type(exc).__name__, default)
        return default
