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

__all__ = ["ExtractExpense", "load_examples", "run_demo", "score"]

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
    messages = program.adapter.format(program.signature, program.demos, example.to_dict("inputs"))
    for message in messages:
        content = message["content"]
        body = content if isinstance(content, str) else json.dumps(content, indent=2)
        console.rule(f"[bold]{message['role']}")
        console.print(body, markup=False, highlight=False)
    console.rule()


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
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # piped or in CI: rich would squeeze the table into 80 columns
        console = Console(width=150)
    demos = load_examples("demo_demos.jsonl")
    data = load_examples("demo_data.jsonl")[:limit]
    lm = sf.LM(model, temperature=0, max_tokens=120, cache=False)
    program = sf.Predict(ExtractExpense, demos=demos, lm=lm, adapter=_adapter(adapter))
    if show_prompt:
        _print_prompt(console, program, data[0])

    console.print(
        f"[bold]sigform demo[/]: {len(data)} expense notes, {len(demos)} demos, "
        f"model [cyan]{model}[/], adapter [cyan]{adapter}[/]"
    )
    started = time.perf_counter()
    results, failures = program.batch(data, num_threads=threads, return_failures=True, progress=True)
    elapsed = time.perf_counter() - started

    table = Table(title="Expense extraction", show_lines=False)
    table.add_column("note", max_width=44, overflow="ellipsis", no_wrap=True)
    for field in OUTPUTS:
        table.add_column(field)
    table.add_column("match")
    per_field = dict.fromkeys(OUTPUTS, 0)
    exact = 0
    tokens = 0
    failed_at = {f.index: f for f in failures}
    for index, (label, pred) in enumerate(zip(data, results, strict=True)):
        scored = score(pred, label)
        exact += scored.exact
        for field, ok in scored.matches.items():
            per_field[field] += ok
        if pred is None:
            error = failed_at.get(index)
            reason = type(error.error).__name__ if error else "failed"
            table.add_row(label["text"], *(["-"] * len(OUTPUTS)), f"[red]{reason}[/]")
            continue
        tokens += pred._usage.completion_tokens
        cells = [f"[{'green' if scored.matches[f] else 'red'}]{pred[f]}[/]" for f in OUTPUTS]
        table.add_row(label["text"], *cells, "[green]yes[/]" if scored.exact else "[red]no[/]")
    console.print(table)

    n = max(len(data), 1)
    fields = ", ".join(f"{f} {per_field[f] / n:.0%}" for f in OUTPUTS)
    console.print(f"exact records: [bold]{exact}/{len(data)}[/] ({exact / n:.0%}); per field: {fields}")
    console.print(
        f"parse failures: {len(failures)}; generated tokens: {tokens} ({tokens / n:.1f} per example); "
        f"time: {elapsed:.1f} s ({elapsed / n:.2f} s per example)"
    )
    return 0
