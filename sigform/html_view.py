"""HTML views for notebooks: typed values as a person reads them, signatures and trajectories.

Dates and times in ISO form, enums by name, pydantic models and dicts as nested tables, lists
as numbered items; everything escaped, long text shortened, nesting bounded.
"""

from __future__ import annotations

import datetime
import enum
import html
from collections.abc import Mapping
from typing import Any

__all__ = ["signature_html", "table_html", "trajectory_html", "value_html"]

_MAX_CHARS = 2000
_MAX_ITEMS = 50
_MAX_DEPTH = 4
_CELL = "text-align:left;vertical-align:top"
_KEY = f"{_CELL};font-weight:bold"
_DIM = f"{_CELL};color:#888"


def _text(text: str) -> str:
    if len(text) > _MAX_CHARS:
        text = text[:_MAX_CHARS] + f"... ({len(text) - _MAX_CHARS} more chars)"
    return f"<span style='white-space:pre-wrap'>{html.escape(text)}</span>"


def value_html(value: object, depth: int = 0) -> str:
    """One typed value as HTML."""
    if value is None:
        return "<i style='color:#888'>None</i>"
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return html.escape(value.isoformat())
    if isinstance(value, enum.Enum):
        return html.escape(value.name)
    if isinstance(value, (bool, int, float)):
        return html.escape(repr(value))
    if depth >= _MAX_DEPTH:
        return _text(repr(value))
    fields = _model_fields(value)
    if fields is not None:
        return table_html(fields, depth=depth + 1, caption=type(value).__name__)
    if isinstance(value, Mapping):
        return table_html({str(k): v for k, v in value.items()}, depth=depth + 1)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if not items:
            return "<i style='color:#888'>(empty)</i>"
        shown = "".join(f"<li>{value_html(item, depth + 1)}</li>" for item in items[:_MAX_ITEMS])
        extra = len(items) - _MAX_ITEMS
        more = f"<li style='color:#888'>... {extra} more</li>" if extra > 0 else ""
        return f"<ol style='margin:0;padding-left:1.5em'>{shown}{more}</ol>"
    return _text(repr(value))


def _model_fields(value: object) -> dict[str, object] | None:
    """A pydantic model's (or dataclass's) fields by name; None for other values."""
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, Mapping):
        return {name: getattr(value, name, None) for name in model_fields}
    dc_fields = getattr(type(value), "__dataclass_fields__", None)
    if isinstance(dc_fields, Mapping):
        return {name: getattr(value, name, None) for name in dc_fields}
    return None


def table_html(
    values: Mapping[str, object],
    *,
    depth: int = 0,
    caption: str | None = None,
    roles: Mapping[str, str] | None = None,
) -> str:
    """A two-column table of ``values`` (three with ``roles``: input / label)."""
    rows = []
    for key, value in values.items():
        role = f"<td style='{_DIM}'>{html.escape(roles.get(key, ''))}</td>" if roles is not None else ""
        rows.append(
            f"<tr><td style='{_KEY}'>{html.escape(key)}</td>{role}"
            f"<td style='{_CELL}'>{value_html(value, depth)}</td></tr>"
        )
    head = f"<caption style='text-align:left;color:#888'>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{head}{''.join(rows)}</table>"


def signature_html(signature: Any) -> str:
    """A signature: its instructions, then each field with its role, type and description."""
    from sigform.types import type_name

    rows = []
    for role, fields in (("input", signature.input_fields), ("output", signature.output_fields)):
        for name, spec in fields.items():
            desc = spec.desc or ""
            rows.append(
                f"<tr><td style='{_KEY}'>{html.escape(name)}</td><td style='{_DIM}'>{role}</td>"
                f"<td style='{_CELL}'><code>{html.escape(type_name(spec.annotation))}</code></td>"
                f"<td style='{_CELL}'>{_text(desc)}</td></tr>"
            )
    head = (
        "<tr><th style='text-align:left'>field</th><th style='text-align:left'>role</th>"
        "<th style='text-align:left'>type</th><th style='text-align:left'>description</th></tr>"
    )
    return (
        f"<div><b>{html.escape(signature.__name__)}</b>"
        f"<div style='white-space:pre-wrap;margin:0.3em 0'>{html.escape(signature.instructions)}</div>"
        f"<table>{head}{''.join(rows)}</table></div>"
    )


def trajectory_html(trajectory: Any) -> str:
    """An agent run: each step's thought, then its tool calls with arguments, approval and result."""
    rows = []
    for step in trajectory.steps:
        rows.append(
            f"<tr><td style='{_KEY}'>step {step.index}</td>"
            f"<td style='{_CELL}' colspan='4'>{_text(step.thought)}</td></tr>"
        )
        for call in step.calls:
            args = call.args if call.args is not None else call.arguments
            args_html = table_html(args, depth=1) if isinstance(args, Mapping) else _text(str(args))
            approval = call.approval.value if call.approval is not None else ""
            rows.append(
                f"<tr><td></td><td style='{_CELL}'><code>{html.escape(call.tool)}</code></td>"
                f"<td style='{_CELL}'>{args_html}</td><td style='{_DIM}'>{html.escape(approval)}</td>"
                f"<td style='{_CELL}'><b>{html.escape(call.result.status)}</b>: "
                f"{_text(call.result.for_user)}</td></tr>"
            )
        if step.note:
            rows.append(f"<tr><td></td><td style='{_DIM}' colspan='4'>note: {_text(step.note)}</td></tr>")
    return (
        f"<div><b>Trajectory</b> <span style='color:#888'>({html.escape(trajectory.status)}, "
        f"{len(trajectory.steps)} step(s))</span><table>{''.join(rows)}</table></div>"
    )
