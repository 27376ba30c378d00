"""Saying once per process that the embedded local model stands in for an unconfigured LM."""

from __future__ import annotations

import logging
import sys
import threading

logger = logging.getLogger("sigform.lm")
_DEFAULT_NOTICE = (
    "no LM configured: using the embedded local model (Gemma 3 270M, on this machine). "
    "Pick one with sigform.configure(lm=sigform.LM('provider/model'))."
)
_noticed = threading.Event()


def default_model_notice() -> None:
    """Say once per process that the local model stands in for an unconfigured LM: on the
    ``sigform.lm`` logger when the application logs it, else as one line on stderr (nothing when
    the logger is set above WARNING)."""
    if _noticed.is_set():
        return
    _noticed.set()
    if not logger.isEnabledFor(logging.WARNING):
        return  # silenced on purpose
    if _logged_somewhere(logger, logging.WARNING):
        logger.warning(_DEFAULT_NOTICE)
    else:
        print(f"sigform: {_DEFAULT_NOTICE}", file=sys.stderr)


def _logged_somewhere(log: logging.Logger, level: int) -> bool:
    """Whether a record at ``level`` reaches a handler that writes it somewhere (sigform's own
    NullHandler does not count)."""
    current: logging.Logger | None = log
    while current is not None:
        if any(not isinstance(h, logging.NullHandler) and level >= h.level for h in current.handlers):
            return True
        current = current.parent if current.propagate else None
    return False
