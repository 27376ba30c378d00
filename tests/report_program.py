"""The ``Report`` program that the checkpoint and Ray tests run, and the fake provider's answers.

Shared by ``tests/predict/test_batch_checkpoint.py`` and ``tests/scale/``. It is a module rather
than a fixture because the child processes those tests kill and the Ray workers import it by name:
they unpickle the signature's field types (``Color``, ``Box``) from here. Put this folder on the
``PYTHONPATH`` of anything that runs the program (:data:`TESTS`).
"""

from __future__ import annotations

import datetime
import enum
import json
from pathlib import Path
from typing import Any, Literal

import pydantic

import sigform as sf
from sigform.testing.providers import ErrorReply, OpenAIChatFake, RecordedRequest, Reply

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Box(pydantic.BaseModel):
    width: int
    label: str


class Report(sf.Signature):
    x: int = sf.InputField()
    when: datetime.date = sf.OutputField()
    color: Color = sf.OutputField()
    box: Box = sf.OutputField()
    kind: Literal["odd", "even"] = sf.OutputField()
    score: float = sf.OutputField()


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def x_of(request: RecordedRequest) -> int:
    """The row a request is for (its ``x`` input)."""
    return int(request.json["messages"][-1]["content"].split("[[ ## x ## ]]")[1].split()[0])


def expected(x: int) -> dict[str, Any]:
    """The outputs the program gives for ``x`` (with :func:`report_reply` answering)."""
    return {
        "when": datetime.date(2024, 1, x % 28 + 1),
        "color": Color.RED if x % 2 else Color.BLUE,
        "box": Box(width=x, label=f"box {x}"),
        "kind": "odd" if x % 2 else "even",
        "score": x / 4,
    }


def report_reply(request: RecordedRequest) -> Reply:
    """Answers every row with :func:`expected`."""
    want = expected(x_of(request))
    box = json.dumps(want["box"].model_dump())
    return Reply(
        chat(when=want["when"], color=want["color"].value, box=box, kind=want["kind"], score=want["score"])
    )


def failing_reply(request: RecordedRequest) -> Reply | ErrorReply:
    """Like :func:`report_reply`, but rows with ``x % 7 == 5`` get a 400."""
    x = x_of(request)
    return ErrorReply(400, f"cannot answer x={x}") if x % 7 == 5 else report_reply(request)


def report_program(fake: OpenAIChatFake, *, api_key: str = "sk-report", **options: Any) -> sf.Predict:
    """``Predict(Report)`` on ``fake`` with ChatAdapter, no cache, and ``options`` for the LM."""
    lm = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, api_key=api_key, cache=False, **options)
    return sf.Predict(Report, lm=lm, adapter=sf.ChatAdapter())
