"""How an :class:`EvaluationResult` looks: plain text, a rich table, notebook HTML.

All three show the same things: the score with its interval, per-field accuracy, failures by
kind, what the run cost, and (HTML and rich) the worst examples.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from sigform.excerpt import shorten

if TYPE_CHECKING:
    from sigform.evaluation.result import EvaluationResult, ExampleRecord

__all__ = ["html_summary", "rich_summary", "text_summary"]

_WORST = 5


def _headline(result: EvaluationResult) -> list[tuple[str, str]]:
    rows = [
        ("score", f"{result.score.percent()} ({result.score.method} 95%, n={result.score.n})"),
        ("answered examples only", result.answered_score.percent()),
        ("parse failures (scored 0)", str(result.parse_errors)),
        ("other errors (scored 0)", str(result.errors)),
    ]
    if result.metric_errors:
        rows.append(("METRIC ERRORS (not scored)", str(result.metric_errors)))
    cache = f" ({result.cache_hits} from cache)" if result.cache_hits else ""
    rows.append(("LM calls", f"{result.calls}{cache}"))
    rows.append(("tokens (prompt / completion)", f"{result.prompt_tokens:,} / {result.completion_tokens:,}"))
    if result.cost is not None:
        rows.append(("cost", f"${result.cost:.4f}"))
    rows.append(("time", f"{result.seconds:.2f} s"))
    if result.leaks:
        rows.append(("LABEL LEAK", f"{result.leaks} examples are demos of the program"))
    return rows


def _title(result: EvaluationResult) -> str:
    return f"{result.program} on {result.n} examples, metric {result.metric}"


def _brief(record: ExampleRecord) -> str:
    if record.status == "ok":
        return shorten(record.prediction, 120)
    text = record.error or record.status
    if record.raw:
        text += f" | raw: {shorten(record.raw[-1], 120)}"
    return shorten(text, 240)


def _score_text(record: ExampleRecord) -> str:
    return "-" if record.score is None else f"{record.score:.2f}"


def text_summary(result: EvaluationResult) -> str:
    lines = [_title(result)]
    lines += [f"  {name}: {value}" for name, value in _headline(result)]
    if result.field_accuracy:
        lines.append("  field accuracy:")
        lines += [f"    {name}: {score.percent()}" for name, score in result.field_accuracy.items()]
    return "\n".join(lines)


def rich_summary(result: EvaluationResult) -> Any:
    from rich.console import Group
    from rich.table import Table

    head = Table(title=_title(result), title_justify="left", show_header=False)
    head.add_column("what", style="bold")
    head.add_column("value")
    for name, value in _headline(result):
        head.add_row(name, value)
    parts: list[Any] = [head]
    if result.field_accuracy:
        fields = Table(title="field accuracy", title_justify="left")
        fields.add_column("field", style="bold")
        fields.add_column("accuracy [95% interval]")
        for name, score in result.field_accuracy.items():
            fields.add_row(name, score.percent())
        parts.append(fields)
    worst = [r for r in result.worst(_WORST) if r.status != "ok" or (r.score or 0.0) < 1.0]
    if worst:
        table = Table(title="worst examples", title_justify="left")
        for column in ("#", "status", "score", "inputs", "gold", "prediction / error"):
            table.add_column(column, overflow="fold")
        for r in worst:
            cells = (
                str(r.index),
                r.status,
                _score_text(r),
                shorten(r.inputs, 80),
                shorten(r.gold, 80),
                _brief(r),
            )
            table.add_row(*cells)
        parts.append(table)
    return Group(*parts)


def _cell(text: object) -> str:
    return f"<td style='text-align:left;vertical-align:top'>{html.escape(str(text))}</td>"


def html_summary(result: EvaluationResult) -> str:
    out = [f"<div><b>{html.escape(_title(result))}</b><table>"]
    out += [f"<tr>{_cell(name)}{_cell(value)}</tr>" for name, value in _headline(result)]
    out.append("</table>")
    if result.field_accuracy:
        out.append("<table><tr><th>field</th><th>accuracy [95% interval]</th></tr>")
        out += [f"<tr>{_cell(n)}{_cell(s.percent())}</tr>" for n, s in result.field_accuracy.items()]
        out.append("</table>")
    worst = [r for r in result.worst(_WORST) if r.status != "ok" or (r.score or 0.0) < 1.0]
    if worst:
        out.append("<b>worst examples</b><table><tr>")
        out += [f"<th>{h}</th>" for h in ("#", "status", "score", "inputs", "gold", "prediction / error")]
        out.append("</tr>")
        for r in worst:
            cells = (
                r.index,
                r.status,
                _score_text(r),
                shorten(r.inputs, 160),
                shorten(r.gold, 160),
                _brief(r),
            )
            out.append("<tr>" + "".join(_cell(c) for c in cells) + "</tr>")
        out.append("</table>")
    out.append("</div>")
    return "".join(out)
