"""The tasks of the real-model suite: their output types, field descriptions and data files.

This module needs only the standard library and pydantic, so that DSPy's side (another
virtualenv) loads it by path and declares exactly the same fields as sigform's side and the
grammar script. Each task has one input (``text``) and typed outputs; every example file is JSONL
with ``id``, ``text``, ``expect`` (the outputs as plain JSON: dates as ISO strings, models as dicts,
``null`` where the text does not state the value) and optional ``also`` (other acceptable answers
for a string field whose span is debatable, e.g. a vendor with or without its city).

Splits (``data/<task>.<split>.jsonl``): ``demos`` (3 per task, given to every program), ``dev``
(tune prompts and adapters on these) and ``test`` (the held-out figures: do not tune on them).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field, TypeAdapter

DATA = Path(__file__).resolve().parent / "data"
SPLITS = ("dev", "test")


class Venue(BaseModel):
    name: str = Field(description="name of the place")
    city: str


class Event(BaseModel):
    title: str = Field(description="name of the event")
    date: dt.date
    venue: Venue
    capacity: Optional[int] = Field(default=None, description="how many people or places; null if not stated")


@dataclass(frozen=True)
class OutputSpec:
    name: str
    annotation: Any
    desc: str = ""


@dataclass(frozen=True)
class Task:
    name: str
    instructions: str
    input_desc: str
    outputs: tuple[OutputSpec, ...]

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs)

    def examples(self, split: str) -> list[dict[str, Any]]:
        """The examples of ``split`` (``demos``, ``dev`` or ``test``) as read from the file."""
        path = DATA / f"{self.name}.{split}.jsonl"
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def typed(self, expect: dict[str, Any]) -> dict[str, Any]:
        """The expected outputs as typed values (dates, models), for demos."""
        return {o.name: TypeAdapter(o.annotation).validate_python(expect[o.name]) for o in self.outputs}


TASKS: dict[str, Task] = {
    "people": Task(
        "people",
        "Extract the person described in the text.",
        "a short text about one person",
        (
            OutputSpec("name", str, "full name"),
            OutputSpec("age", Optional[int], "age in years; null if not stated"),
            OutputSpec("city", Optional[str], "city where the person lives; null if not stated"),
        ),
    ),
    "invoice": Task(
        "invoice",
        "Extract the invoice details from the text.",
        "a short text about a bill or invoice",
        (
            OutputSpec("vendor", str, "who issued the bill"),
            OutputSpec("total", float, "the amount to pay, as a number"),
            OutputSpec("currency", Literal["USD", "EUR", "GBP", "JPY"]),
            OutputSpec("due_date", Optional[dt.date], "when payment is due; null if not stated"),
        ),
    ),
    "recipe": Task(
        "recipe",
        "List the dish and its ingredients from the recipe text.",
        "a short recipe",
        (
            OutputSpec("dish", str, "name of the dish"),
            OutputSpec("ingredients", list[str], "ingredient names only, without amounts"),
            OutputSpec("servings", Optional[int], "how many people it serves; null if not stated"),
        ),
    ),
    "event": Task(
        "event",
        "Extract the event announced in the text.",
        "a short event announcement",
        (OutputSpec("event", Event),),
    ),
}


def select(names: str | None) -> list[Task]:
    """The tasks named in a comma-separated list (all when None)."""
    if not names:
        return list(TASKS.values())
    unknown = [n for n in names.split(",") if n not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; choose from {sorted(TASKS)}")
    return [TASKS[n] for n in names.split(",")]


def to_plain(value: Any) -> Any:
    """A parsed value as plain JSON (what ``expect`` holds): models as dicts, dates as ISO text."""
    if isinstance(value, BaseModel):
        return to_plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if hasattr(value, "value") and not isinstance(value, (str, int, float, bool)):  # an enum
        return to_plain(value.value)
    return value
