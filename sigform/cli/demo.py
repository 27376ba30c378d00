"""The main job: a few-shot typed extraction program, run on a small labelled set.

The task is deliberately concrete: read a one-line expense note and return a typed record
(payee, amount in USD, date, and a category from a fixed set). Four labelled demos teach the
format; twelve labelled texts measure it. Everything runs on the embedded local model unless
``--model`` names another one.
"""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import sigform as sf

__all__ = ["DemoReport", "ExtractExpense", "build_program", "evaluate", "load_examples", "run_demo", "score"]

Category = Literal["meals", "travel", "office", "software"]
OUTPUTS = ("payee", "amount_usd", "date", "category")


class ExtractExpense(sf.Signature):
    """Extract the expense record from the note."""

    text: str = sf.InputField(desc="a one-line expense note")
    payee: str = sf.OutputField(desc="who was paid, as written in the note")
    amount_usd: float = sf.OutputField(desc="the amount paid in US dollars")
    date: datetime.date = sf.OutputField(desc="the date of the expense")
    category: Category = sf.OutputField()


def load_examples(name: str) -> list[sf.Example]:
    """Load a bundled JSONL file (``demo_data.jsonl`` or ``demo_demos.jsonl``) as Examples."""
    text = resources.files("sigform.cli").joinpath(name).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for row in rows:
        row["date"] = datetime.date.fromisoformat(row["date"])
    return [sf.Example(row).with_inputs("text") for row in rows]


@dataclass(frozen=True)
class Scored:
    """How one prediction compares with its label, field by field."""

    matches: dict[str, bool]

    @property
    def exact(self) -> bool:
        return all(self.matches.values())


def score(prediction: Any, label: sf.Example) -> Scored:
    """Field-by-field comparison; strings compare case-insensitively, amounts to the cent."""
    matches: dict[str, bool] = {}
    for field in OUTPUTS:
        got, want = (None if prediction is None else prediction[field]), label[field]
        if isinstance(want, float):
            ok = isinstance(got, (int, float)) and abs(got - want) < 0.005
        elif isinstance(want, str):
            ok = isinstance(got, str) and got.strip().casefold() == want.casefold()
        else:
            ok = got == want
        matches[field] = ok
    return Scored(matches)


def _adapter(name: str) -> sf.Adapter:
    return {
        "chat": sf.ChatAdapter,
        "json": sf.JSONAdapter,
        "xml": sf.XMLAdapter,
        "two-step": sf.TwoStepAdapter,
    }[name]()


def _print_prompt(console: Any, program: sf.Predict, example: sf.Example) -> None:
    adapter = program.adapter or sf.ChatAdapter()  # build_program always sets one; the default otherwise
    messages = adapter.format(program.signature, program.demos, example.to_dict("inputs"))
    for message in messages:
        content = message["content"]
        body = content if isinstance(content, str) else json.dumps(content, indent=2)
        console.rule(f"[bold]{message['role']}")
        console.print(body, markup=False, highlight=False)
    console.rule()


@dataclass
class DemoReport:
    """What one run of the demo task produced, scored against the labels."""

    adapter: str
    model: str
    examples: list[sf.Example]
    predictions: list[Any]
    failures: dict[int, Any]
    seconds: float
    completion_tokens: int  # every generated token, failed attempts and re-asks included

    @property
    def scores(self) -> list[Scored]:
        return [score(p, e) for p, e in zip(self.predictions, self.examples, strict=True)]

    @property
    def exact(self) -> int:
        return sum(s.exact for s in self.scores)

    def field_accuracy(self, field: str) -> float:
        return sum(s.matches[field] for s in self.scores) / max(len(self.examples), 1)

    @property
    def accuracy(self) -> float:
        """Share of fields right over all examples and fields."""
        return sum(self.field_accuracy(f) for f in OUTPUTS) / len(OUTPUTS)

    @property
    def parse_failure_rate(self) -> float:
        return len(self.failures) / max(len(self.examples), 1)


def build_program(adapter: str = "chat", lm: Any = None) -> sf.Predict:
    """The demo program: the typed signature with the bundled few-shot demos."""
    return sf.Predict(
        ExtractExpense, demos=load_examples("demo_demos.jsonl"), lm=lm, adapter=_adapter(adapter)
    )


def evaluate(
    *,
    adapter: str = "chat",
    model: str = "local",
    limit: int | None = None,
    threads: int = 1,
    progress: bool | None = None,
) -> DemoReport:
    """Run the demo program over the bundled labelled set and score it."""
    data = load_examples("demo_data.jsonl")[:limit]
    lm = sf.LM(model, temperature=0, max_tokens=120, cache=False)
    program = build_program(adapter, lm)
    before = lm.usage.completion_tokens
    started = time.perf_counter()
    results, failures = program.batch(data, num_threads=threads, return_failures=True, progress=progress)
    seconds = time.perf_counter() - started
    return DemoReport(
        adapter=adapter,
        model=model,
        examples=data,
        predictions=list(results),
        failures={f.index: f for f in failures},
        seconds=seconds,
        completion_tokens=lm.usage.completion_tokens - before,
    )


def run_demo(
    *,
    adapter: str = "chat",
    model: str = "local",
    show_prompt: bool = False,
    limit: int | None = None,
    threads: int = 1,
) -> int:
    """Run the demo and print the results table; returns a process exit code."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # piped or in CI: rich would squeeze the table into 80 columns
        console = Console(width=150)
    if show_prompt:
        _print_prompt(console, build_program(adapter), load_examples("demo_data.jsonl")[0])
    console.print(
        "[bold]sigform demo[/]: few-shot expense extraction, "
        f"model [cyan]{escape(model)}[/], adapter [cyan]{adapter}[/]"
    )
    report = evaluate(adapter=adapter, model=model, limit=limit, threads=threads, progress=True)

    table = Table(title="Expense extraction", show_lines=False)
    table.add_column("note", max_width=44, overflow="ellipsis", no_wrap=True)
    for field in OUTPUTS:
        table.add_column(field)
    table.add_column("match")
    for index, (label, pred, scored) in enumerate(
        zip(report.examples, report.predictions, report.scores, strict=True)
    ):
        if pred is None:
            failure = report.failures.get(index)
            reason = type(failure.error).__name__ if failure else "failed"
            table.add_row(escape(label["text"]), *(["-"] * len(OUTPUTS)), f"[red]{reason}[/]")
            continue
        # model output and notes are text, never markup
        cells = [f"[{'green' if scored.matches[f] else 'red'}]{escape(str(pred[f]))}[/]" for f in OUTPUTS]
        table.add_row(escape(label["text"]), *cells, "[green]yes[/]" if scored.exact else "[red]no[/]")
    console.print(table)

    n = max(len(report.examples), 1)
    fields = ", ".join(f"{f} {report.field_accuracy(f):.0%}" for f in OUTPUTS)
    console.print(
        f"exact records: [bold]{report.exact}/{len(report.examples)}[/] ({report.exact / n:.0%}); "
        f"field accuracy {report.accuracy:.0%} ({fields})"
    )
    console.print(
        f"parse failures: {len(report.failures)}; generated tokens: {report.completion_tokens} "
        f"({report.completion_tokens / n:.1f} per example); "
        f"time: {report.seconds:.1f} s ({report.seconds / n:.2f} s per example)"
    )
    return 0
