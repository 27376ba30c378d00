"""Call history: what was sent, what came back, usage, cache hit and latency (never the api key).

Each LM keeps a bounded ``lm.history``; the process keeps the last calls of every LM for
:func:`inspect_history`, which prints them with rich.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from sigform.lm.interface import Completion, Usage

# what the layer that fitted a request (sigform.conversation.send) says about it, for the history
# entry of the call that sends it; a context variable keeps concurrent calls (threads, tasks) apart
_active_report: contextvars.ContextVar[Any] = contextvars.ContextVar("sigform_prune_report", default=None)


def active_report() -> Any:
    """The :class:`~sigform.conversation.PruneReport` of the request being sent in this thread or
    task (None: nothing was pruned)."""
    return _active_report.get()


def reporting(report: object) -> AbstractContextManager[None]:
    """Make ``report`` the :func:`active_report` while the request is sent."""
    if report is None and _active_report.get() is None:
        return _UNCHANGED  # the common case (nothing pruned, no outer report): nothing to set
    return _reporting(report)


_UNCHANGED = nullcontext()


@contextmanager
def _reporting(report: object) -> Iterator[None]:
    token = _active_report.set(report)
    try:
        yield
    finally:
        _active_report.reset(token)


GLOBAL_HISTORY_SIZE = 1000


@dataclass(slots=True)  # not frozen: a frozen one costs ~3 us more per call
class HistoryEntry:
    """One LM call. ``params`` are the request settings (no credentials); ``error`` is the
    message of the error the call ended with, if any; ``prune_report`` says which earlier turns
    were dropped to fit the context window (None: the request was sent whole)."""

    model: str
    provider: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    completions: list[Completion]
    usage: Usage
    cache_hit: bool
    latency: float
    backend: str
    timestamp: float = field(default_factory=time.time)
    error: str | None = None
    api_base: str | None = None
    prune_report: Any = None  # sigform.conversation.PruneReport: turns dropped to fit the context window
    prompt: str | None = None  # a text completion's prompt (a base model: sigform.lm.text_mode)


_global: deque[HistoryEntry] = deque(maxlen=GLOBAL_HISTORY_SIZE)
_lock = threading.Lock()


def record(entry: HistoryEntry, local: deque[HistoryEntry] | None) -> None:
    """Append ``entry`` to the LM's history and to the process-wide one."""
    with _lock:
        _global.append(entry)
    if local is not None:
        local.append(entry)


def global_history() -> list[HistoryEntry]:
    """Every recorded call still in the process-wide history, oldest first."""
    with _lock:
        return list(_global)


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, dict) and p.get("type") == "text":
                parts.append(str(p.get("text", "")))
            elif isinstance(p, dict):
                parts.append(f"<{p.get('type', 'part')}>")
        return "\n".join(parts)
    return "" if content is None else repr(content)


def inspect_history(n: int = 1, *, entries: list[HistoryEntry] | None = None, console: Any = None) -> None:
    """Print the last ``n`` LM calls (all LMs, or ``entries``): messages, completions, usage,
    cache hit and latency."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = console or Console()
    chosen = (entries if entries is not None else global_history())[-n:] if n > 0 else []
    if not chosen:  # say so: printing nothing looked like a broken call
        if n <= 0:
            console.print("(n=0: nothing shown)")
        elif entries is not None:
            console.print("(no history yet: this LM has made no calls)")
        else:
            console.print("(no history yet: no LM call has been made in this process)")
        return
    for entry in chosen:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.timestamp))
        u = entry.usage
        flags = "cache hit" if entry.cache_hit else f"{entry.latency * 1000:.1f} ms"
        console.rule(f"[bold]{entry.model}[/] ({entry.provider}, {entry.backend}) {stamp} - {flags}")
        if entry.prompt is not None:
            title = "prompt (text completion)"
            console.print(Panel(Text(entry.prompt), title=title, title_align="left", border_style="blue"))
        for message in entry.messages if entry.prompt is None else ():
            role = str(message.get("role", "?"))
            body = Text(_content_text(message.get("content")))
            if message.get("tool_calls"):
                body.append(f"\n[tool calls: {message['tool_calls']!r}]", style="dim")
            console.print(Panel(body, title=role, title_align="left", border_style="blue"))
        if entry.prune_report is not None:
            console.print(f"[yellow]pruned: {entry.prune_report.summary()}[/]")
        if entry.error:
            console.print(Panel(Text(entry.error), title="error", title_align="left", border_style="red"))
        for i, c in enumerate(entry.completions):
            body = Text()
            if c.reasoning:
                body.append(c.reasoning + "\n", style="italic dim")
            body.append(c.text)
            for call in c.tool_calls:
                body.append(f"\n-> {call.name}({call.arguments!r})", style="magenta")
            title = "response" if len(entry.completions) == 1 else f"response {i + 1}"
            console.print(
                Panel(body, title=f"{title} [{c.finish_reason}]", title_align="left", border_style="green")
            )
        cost = f", cost ${u.cost:.6f}" if u.cost is not None else ""
        console.print(
            f"[dim]usage: {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
            f" ({u.reasoning_tokens} reasoning, {u.cached_tokens} cached){cost}; "
            f"cache hit: {entry.cache_hit}; latency {entry.latency * 1000:.1f} ms[/]"
        )
