"""The batch progress bar: done/failed counts and generated (completion) tokens, shown only where
a person watches.

Shown by default in a terminal (stderr is a TTY, drawn with rich) or a Jupyter notebook (an HTML
``<progress>`` bar redrawn through a display handle: no ipywidgets needed); hidden when the ``CI``
environment variable is set or output goes to a file or pipe. ``progress=True/False`` forces it.
"""

from __future__ import annotations

import html
import os
import sys
import time
from typing import Any

from sigform.probes import probe

__all__ = ["BatchProgress", "progress_wanted"]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    ip = probe("the IPython shell", lambda: shell.get_ipython(), None)
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_wanted(progress: bool | None) -> bool:
    """Resolve ``progress=None`` (auto) to on or off."""
    if progress is not None:
        return bool(progress)
    if os.environ.get("CI"):
        return False
    if _in_notebook():
        return True
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


class BatchProgress:
    """Counts of a running batch, drawn when enabled (a no-op otherwise): rich in a terminal, an
    HTML bar in a notebook."""

    def __init__(self, total: int, *, enabled: bool, description: str = "batch") -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.tokens = 0
        self._progress: Any = None
        self._task: object = None
        self._notebook: _NotebookBar | None = None
        if enabled and _in_notebook():
            self._notebook = _NotebookBar(self, description)
        elif enabled:
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
                console=Console(stderr=True),
                transient=False,
            )
            self._task = self._progress.add_task(description, total=total, failed=0, tokens=0)

    def __enter__(self) -> BatchProgress:
        if self._progress is not None:
            self._progress.start()
        if self._notebook is not None:
            self._notebook.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
        if self._notebook is not None:
            self._notebook.draw(final=True)

    def advance(self, *, ok: bool, tokens: int) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        self.tokens += tokens
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=self.failed, tokens=self.tokens)
        if self._notebook is not None:
            self._notebook.draw()

    @property
    def shown(self) -> bool:
        return self._progress is not None or self._notebook is not None


class _NotebookBar:
    """An HTML ``<progress>`` bar in the cell's output, redrawn in place through a display handle
    (at most a few times a second; always at the end)."""

    _EVERY = 0.2  # seconds between redraws

    def __init__(self, counts: BatchProgress, description: str) -> None:
        self.counts = counts
        self.description = description
        self.started = time.monotonic()
        self.drawn = 0.0
        self.handle: Any = None

    def start(self) -> None:
        from IPython.core.display import HTML
        from IPython.core.display_functions import display

        self.started = time.monotonic()
        self.handle = display(HTML(self.html()), display_id=True)

    def draw(self, *, final: bool = False) -> None:
        now = time.monotonic()
        if self.handle is None or (not final and now - self.drawn < self._EVERY):
            return
        from IPython.core.display import HTML

        self.drawn = now
        self.handle.update(HTML(self.html()))

    def html(self) -> str:
        c = self.counts
        failed = f" · <span style='color:#c00'>{c.failed} failed</span>" if c.failed else " · 0 failed"
        return (
            f"<div><b>{html.escape(self.description)}</b> "
            f"<progress value='{c.done}' max='{max(c.total, 1)}' style='width:40%'></progress> "
            f"{c.done}/{c.total}{failed} · {c.tokens:,} tokens · "
            f"{time.monotonic() - self.started:.1f} s</div>"
        )
