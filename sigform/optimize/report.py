"""``optimizer.report``: what an optimiser tried, how each try scored, and what it cost.

Each :class:`Trial` is one candidate (a demo set, a bootstrap round, the final program) with its
score and 95% interval where it was scored, and the LM calls and tokens it spent. The report's
totals cover the whole run (every teacher and validation call, cache hits counted apart).
"""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field
from typing import Any

from sigform.evaluation.stats import Score

__all__ = ["OptimizationReport", "Trial"]


@dataclass
class Trial:
    """One thing the optimiser tried. ``score`` is None when it was not scored; ``chosen`` marks
    the candidate the result program uses."""

    name: str
    detail: str = ""
    score: Score | None = None
    calls: int = 0
    tokens: int = 0
    chosen: bool = False
    metric_errors: int = 0  # examples whose metric raised: counted as failures in ``score``

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "detail": self.detail,
            "score": self.score.to_dict() if self.score is not None else None,
            "calls": self.calls,
            "tokens": self.tokens,
            "chosen": self.chosen,
            "metric_errors": self.metric_errors,
        }


@dataclass
class OptimizationReport:
    """The record of one ``compile``: trials, totals, and the demos chosen per predictor."""

    optimizer: str
    trainset: int = 0
    valset: int = 0
    trials: list[Trial] = field(default_factory=list)
    demos: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def scores(self) -> list[Score]:
        """The scores of every scored trial, in the order tried."""
        return [t.score for t in self.trials if t.score is not None]

    def distribution(self) -> dict[str, float] | None:
        """min / median / max of the scored trials (None when nothing was scored)."""
        values = [float(s) for s in self.scores()]
        if not values:
            return None
        return {"min": min(values), "median": statistics.median(values), "max": max(values), "n": len(values)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer,
            "trainset": self.trainset,
            "valset": self.valset,
            "trials": [t.to_dict() for t in self.trials],
            "distribution": self.distribution(),
            "demos": dict(self.demos),
            "notes": list(self.notes),
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
        }

    # -- display --------------------------------------------------------------------------------
    def _lines(self) -> list[tuple[str, str]]:
        rows = [
            ("split", f"{self.trainset} train / {self.valset} validation examples"),
            ("LM calls", f"{self.calls}" + (f" ({self.cache_hits} from cache)" if self.cache_hits else "")),
            ("tokens (prompt / completion)", f"{self.prompt_tokens:,} / {self.completion_tokens:,}"),
            ("time", f"{self.seconds:.2f} s"),
            ("demos chosen", ", ".join(f"{k}: {v}" for k, v in self.demos.items()) or "none"),
        ]
        dist = self.distribution()
        if dist and dist["n"] > 1:
            spread = f"min {dist['min']:.1%}, median {dist['median']:.1%}, max {dist['max']:.1%}"
            rows.append(("score distribution", spread))
        rows += [("note", note) for note in self.notes]
        return rows

    @staticmethod
    def _score_text(trial: Trial) -> str:
        if trial.score is None:
            return "-"
        raised = f" (metric raised on {trial.metric_errors}: failures)" if trial.metric_errors else ""
        return trial.score.percent() + raised

    def __str__(self) -> str:
        lines = [f"{self.optimizer}"]
        lines += [f"  {k}: {v}" for k, v in self._lines()]
        lines.append("  trials:")
        for t in self.trials:
            mark = "*" if t.chosen else " "
            lines.append(
                f"   {mark} {t.name}: {self._score_text(t)}, {t.calls} calls, {t.tokens:,} tokens"
                + (f" ({t.detail})" if t.detail else "")
            )
        return "\n".join(lines)

    __repr__ = __str__

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.table import Table

        head = Table(title=self.optimizer, title_justify="left", show_header=False)
        head.add_column("what", style="bold")
        head.add_column("value")
        for key, value in self._lines():
            head.add_row(key, value)
        trials = Table(title="trials (* = chosen)", title_justify="left")
        for column in ("", "trial", "score [95% interval]", "calls", "tokens", "detail"):
            trials.add_column(column, overflow="fold")
        for t in self.trials:
            mark = "*" if t.chosen else ""
            trials.add_row(mark, t.name, self._score_text(t), str(t.calls), f"{t.tokens:,}", t.detail)
        return Group(head, trials)

    def _repr_html_(self) -> str:
        def cell(value: object) -> str:
            return f"<td style='text-align:left'>{html.escape(str(value))}</td>"

        out = [f"<div><b>{html.escape(self.optimizer)}</b><table>"]
        out += [f"<tr>{cell(k)}{cell(v)}</tr>" for k, v in self._lines()]
        out.append("</table><table><tr><th></th><th>trial</th><th>score [95% interval]</th>")
        out.append("<th>calls</th><th>tokens</th><th>detail</th></tr>")
        for t in self.trials:
            cells = ("*" if t.chosen else "", t.name, self._score_text(t), t.calls, f"{t.tokens:,}", t.detail)
            out.append("<tr>" + "".join(cell(c) for c in cells) + "</tr>")
        out.append("</table></div>")
        return "".join(out)
