"""The main job: a few-shot typed extraction program, run on a small labelled set.

The task is deliberately concrete: read a one-line expense note and return a typed record
(payee, amount in USD, date, and a category from a fixed set). Four labelled demos teach the
format; twelve labelled texts measure it. Everything runs on the embedded local model unless
``--model`` names another one.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import sigform as sf
from sigform.predict.context_vars import track_usage

__all__ = [
    "DemoReport", "ExtractExpense", "build_program", "error_kind", "evaluate", "load_examples", "run_demo",
    "score",
]

Category = Literal["meals", "travel", "office", "software"]
OUTPUTS = ("payee", "amount_usd", "date", "category")
ERROR_KINDS = ("infrastructure", "parse", "value", "other")
_MAX_ERROR_CHARS = 3000  # a crash report quotes ~25 log lines; keep a runaway message bounded


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


def error_kind(error: BaseException) -> str:
    """Why an example failed: ``infrastructure`` (the model could not be reached or run: server
    crash, missing extra, provider error), ``parse`` (the answer's format was not followed),
    ``value`` (a field's value did not validate), or ``other``."""
    if isinstance(error, sf.LMError):
        return "infrastructure"
    if isinstance(error, sf.FieldValueError):
        return "value"
    if isinstance(error, sf.ParseError):
        return "parse"
    return "other"


def _adapter(name: str) -> sf.Adapter:
    adapters: dict[str, type[sf.Adapter]] = {
        "auto": sf.AutoAdapter,
        "chat": sf.ChatAdapter,
        "json": sf.JSONAdapter,
        "xml": sf.XMLAdapter,
        "two-step": sf.TwoStepAdapter,
    }
    return adapters[name]()


def _print_prompt(
    console: Any, program: sf.Predict[..., sf.Prediction], example: sf.Example, lm: Any
) -> None:
    adapter = program.adapter or sf.ChatAdapter()  # build_program always sets one; the default otherwise
    inputs = example.to_dict("inputs")
    if lm.model_type == "text":  # a base model: one plain-text document to text completions
        doc = adapter.answering(lm).document(program.signature, program.demos, inputs)
        console.rule("[bold]prompt (text completion)")
        console.print(doc.text, markup=False, highlight=False)
        console.rule()
        return
    messages = adapter.format(program.signature, program.demos, inputs)
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
    mode: str = "chat"  # "text": a plain-text document to text completions (a base model)

    @property
    def answered_by(self) -> str:
        """The adapter(s) that answered (``pred._meta.adapter``), most frequent first."""
        names = Counter(p._meta.adapter for p in self.predictions if p is not None and p._meta.adapter)
        return ", ".join(name for name, _ in names.most_common()) or "-"

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
        """Share of examples whose answer could not be read (format or values): not counting
        examples the model could not answer at all."""
        bad = sum(error_kind(f.error) in ("parse", "value") for f in self.failures.values())
        return bad / max(len(self.examples), 1)

    def errors_by_kind(self) -> dict[str, int]:
        """Failed examples per :func:`error_kind` (kinds with no failure are left out)."""
        counts = dict.fromkeys(ERROR_KINDS, 0)
        for failure in self.failures.values():
            counts[error_kind(failure.error)] += 1
        return {kind: n for kind, n in counts.items() if n}

    @property
    def first_failure(self) -> Any:
        """The failure of the lowest-numbered example, or None."""
        return self.failures[min(self.failures)] if self.failures else None

    @property
    def answered(self) -> int:
        """Examples the program returned values for (right or wrong)."""
        return len(self.examples) - len(self.failures)


def build_program(adapter: str = "auto", lm: Any = None) -> sf.Predict[..., sf.Prediction]:
    """The demo program: the typed signature with the bundled few-shot demos."""
    return sf.Predict(
        ExtractExpense, demos=load_examples("demo_demos.jsonl"), lm=lm, adapter=_adapter(adapter)
    )


def evaluate(
    *,
    adapter: str = "auto",
    model: str = "local",
    limit: int | None = None,
    threads: int = 1,
    progress: bool | None = None,
    lm: object = None,
) -> DemoReport:
    """Run the demo program over the bundled labelled set and score it. ``lm`` replaces the LM
    built from ``model`` (e.g. a ScriptedLM in tests)."""
    data = load_examples("demo_data.jsonl")[:limit]
    if lm is None:
        lm = sf.LM(model, temperature=0, max_tokens=120, cache=False)
    program = build_program(adapter, lm)
    started = time.perf_counter()
    with track_usage() as usage:  # the same per-request counts the progress bar adds up
        results, failures = program.batch(data, num_threads=threads, return_failures=True, progress=progress)
    seconds = time.perf_counter() - started
    return DemoReport(
        adapter=adapter,
        model=model,
        examples=data,
        predictions=list(results),
        failures={f.index: f for f in failures},
        seconds=seconds,
        completion_tokens=usage.usage.completion_tokens,
        mode=next((p._meta.mode for p in results if p is not None), "chat"),
    )


def run_demo(
    *,
    adapter: str = "auto",
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
        lm = sf.LM(model, temperature=0, max_tokens=120, cache=False)
        _print_prompt(console, build_program(adapter), load_examples("demo_data.jsonl")[0], lm)
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
            reason = f"{type(failure.error).__name__} ({error_kind(failure.error)})" if failure else "failed"
            table.add_row(escape(label["text"]), *(["-"] * len(OUTPUTS)), f"[red]{reason}[/]")
            continue
        # model output and notes are text, never markup
        cells = [f"[{'green' if scored.matches[f] else 'red'}]{escape(str(pred[f]))}[/]" for f in OUTPUTS]
        table.add_row(escape(label["text"]), *cells, "[green]yes[/]" if scored.exact else "[red]no[/]")
    console.print(table)

    _print_summary(console, report)
    if report.answered == 0 and report.examples:
        print(f"sigform demo: no example could be answered: {_reason(report)}", file=sys.stderr)
        return 1
    return 0


def _first_line(error: BaseException) -> str:
    return next((line for line in str(error).splitlines() if line.strip()), "").strip()


def _reason(report: DemoReport) -> str:
    """One line saying why the examples failed: the kinds, and the first error."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in report.errors_by_kind().items())
    first = report.first_failure.error
    return f"{len(report.failures)} failed ({kinds}); first: {type(first).__name__}: {_first_line(first)}"


def _print_summary(console: Any, report: DemoReport) -> None:
    from rich.markup import escape

    n = max(len(report.examples), 1)
    fields = ", ".join(f"{f} {report.field_accuracy(f):.0%}" for f in OUTPUTS)
    console.print(
        f"exact records: [bold]{report.exact}/{len(report.examples)}[/] ({report.exact / n:.0%}); "
        f"field accuracy {report.accuracy:.0%} ({fields})"
    )
    kinds = ", ".join(f"{kind} {count}" for kind, count in report.errors_by_kind().items())
    console.print(
        f"failed examples: {len(report.failures)}{f' ({kinds})' if kinds else ''}; "
        f"generated tokens: {report.completion_tokens} ({report.completion_tokens / n:.1f} per example); "
        f"time: {report.seconds:.1f} s ({report.seconds / n:.2f} s per example)"
    )
    how = (
        "text completion: one plain-text few-shot document (the model has no chat template)"
        if report.mode == "text"
        else "chat completion"
    )
    console.print(f"mode: {how}; answered by {report.answered_by}", highlight=False)
    first = report.first_failure
    if first is not None:  # the message, not only the class name: what to fix is in it
        message = str(first.error)
        if len(message) > _MAX_ERROR_CHARS:
            message = message[:_MAX_ERROR_CHARS] + " ..."
        console.print(
            f"[bold red]first error[/] (example #{first.index + 1}, {error_kind(first.error)}): "
            f"{type(first.error).__name__}: {escape(message)}",
            highlight=False,
        )
