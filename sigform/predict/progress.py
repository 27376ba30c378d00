"""The batch progress bar: done/failed counts and generated (completion) tokens, shown only where
a person watches.

Shown by default in a terminal (stderr is a TTY) or a notebook (with ipywidgets, which rich
needs to redraw it there); hidden when the ``CI`` environment variable is set or output goes to
a file or pipe. ``progress=True/False`` forces it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

__all__ = ["BatchProgress", "progress_wanted"]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_wanted(progress: bool | None) -> bool:
    """Resolve ``progress=None`` (auto) to on or off."""
    if progress is not None:
        return bool(progress)
    if os.environ.get("CI"):
        return False
    if _in_notebook():  # rich redraws a bar in a notebook only through ipywidgets
        return importlib.util.find_spec("ipywidgets") is not None
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


class BatchProgress:
    """Counts of a running batch, drawn with rich when enabled (a no-op otherwise)."""

    def __init__(self, total: int, *, enabled: bool, description: str = "batch") -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.tokens = 0
        self._progress: Any = None
        self._task: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TextColumn("{task.fields[tokens]:,} generated tokens"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=not _in_notebook()),
                transient=False,
            )
            self._task = self._progress.add_task(description, total=total, failed=0, tokens=0)

    def __enter__(self) -> BatchProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, *, ok: bool, tokens: int) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        self.tokens += tokens
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=self.failed, tokens=self.tokens)

    @property
    def shown(self) -> bool:
        return self._progress is not None
