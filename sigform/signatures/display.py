"""How examples and predictions look: ``repr`` in a shell, a table in notebooks and under rich."""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["record_html", "record_repr", "record_rich"]

_HTML_VALUE_CHARS = 2000


def record_repr(
    kind: str, values: Mapping[str, object], *, inputs: Iterable[str] | None = None, extra: str = ""
) -> str:
    body = ", ".join(f"{k}={v!r}" for k, v in values.items())
    if inputs is not None:
        body += f"{', ' if body else ''}[inputs: {', '.join(inputs) or '-'}]"
    return f"{kind}({body}{extra})"


def _value_text(value: object) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, (datetime.date, datetime.time)):
        text = value.isoformat()
    else:
        text = repr(value)
    if len(text) > _HTML_VALUE_CHARS:
        text = text[:_HTML_VALUE_CHARS] + f"... ({len(text) - _HTML_VALUE_CHARS} more chars)"
    return text


def record_html(
    kind: str, values: Mapping[str, object], *, inputs: Iterable[str] | None = None, footer: str = ""
) -> str:
    """A record as an HTML table (a role column only when inputs are marked)."""
    from sigform.html_view import table_html

    marked = set(inputs) if inputs is not None else None
    roles = None if marked is None else {k: "input" if k in marked else "label" for k in values}
    foot = f"<div style='color:#888;font-size:smaller'>{html.escape(footer)}</div>" if footer else ""
    return f"<div><b>{html.escape(kind)}</b>{table_html(values, roles=roles)}{foot}</div>"


def record_rich(
    kind: str, values: Mapping[str, object], *, inputs: Iterable[str] | None = None, footer: str = ""
) -> Any:
    from rich.table import Table

    marked = set(inputs) if inputs is not None else None
    table = Table(title=kind, title_justify="left", show_header=False, caption=footer or None)
    table.add_column("field", style="bold")
    if marked is not None:
        table.add_column("role", style="dim")
    table.add_column("value", overflow="fold")
    for key, value in values.items():
        cells = [key]
        if marked is not None:
            cells.append("input" if key in marked else "label")
        cells.append(_value_text(value))
        table.add_row(*cells)
    return table
