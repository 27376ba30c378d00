"""How examples and predictions look: ``repr`` in a shell, a table in notebooks and under rich."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["record_html", "record_repr", "record_rich"]

_HTML_VALUE_CHARS = 2000


def record_repr(
    kind: str, values: Mapping[str, Any], *, inputs: Iterable[str] | None = None, extra: str = ""
) -> str:
    body = ", ".join(f"{k}={v!r}" for k, v in values.items())
    if inputs is not None:
        body += f"{', ' if body else ''}[inputs: {', '.join(inputs) or '-'}]"
    return f"{kind}({body}{extra})"


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    if len(text) > _HTML_VALUE_CHARS:
        text = text[:_HTML_VALUE_CHARS] + f"... ({len(text) - _HTML_VALUE_CHARS} more chars)"
    return text


def record_html(
    kind: str, values: Mapping[str, Any], *, inputs: Iterable[str] | None = None, footer: str = ""
) -> str:
    marked = set(inputs) if inputs is not None else None
    rows = []
    for key, value in values.items():
        role = "" if marked is None else ("input" if key in marked else "label")
        rows.append(
            "<tr>"
            f"<td style='text-align:left;font-weight:bold;vertical-align:top'>{html.escape(key)}</td>"
            f"<td style='text-align:left;color:#888;vertical-align:top'>{role}</td>"
            f"<td style='text-align:left;white-space:pre-wrap'>{html.escape(_value_text(value))}</td>"
            "</tr>"
        )
    foot = f"<div style='color:#888;font-size:smaller'>{html.escape(footer)}</div>" if footer else ""
    return f"<div><b>{html.escape(kind)}</b><table>{''.join(rows)}</table>{foot}</div>"


def record_rich(
    kind: str, values: Mapping[str, Any], *, inputs: Iterable[str] | None = None, footer: str = ""
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
