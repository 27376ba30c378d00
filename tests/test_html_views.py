"""Notebook views (issue 17, item 10): typed values as a person reads them, no empty column, and
HTML for signatures and trajectories."""

from __future__ import annotations

import datetime
import re
from enum import Enum

from pydantic import BaseModel

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM


class Person(BaseModel):
    name: str
    born: datetime.date


class Tier(Enum):
    GOLD = 3


def _empty_cells(page: str) -> list[str]:
    return re.findall(r"<td[^>]*></td>", page)


def test_prediction_values_read_as_a_person_reads_them() -> None:
    pred = sf.Prediction(
        day=datetime.date(2024, 7, 22),
        at=datetime.datetime(2024, 7, 22, 9, 30),
        people=[Person(name="Ada <b>", born=datetime.date(1815, 12, 10))],
        tier=Tier.GOLD,
        counts={"a": 1},
    )
    page = pred._repr_html_()
    assert "2024-07-22" in page and "2024-07-22T09:30:00" in page and "1815-12-10" in page
    assert "datetime." not in page and "Person(" not in page and "Tier." not in page
    assert "<caption style='text-align:left;color:#888'>Person</caption>" in page  # a nested table
    assert page.count("<table>") == 3  # the record, the model, the dict
    assert "Ada &lt;b&gt;" in page  # escaped
    assert _empty_cells(page) == []  # no empty role column for predictions


def test_examples_with_inputs_keep_their_role_column() -> None:
    page = sf.Example(question="q", answer="a").with_inputs("question")._repr_html_()
    assert ">input</td>" in page and ">label</td>" in page


def test_signatures_have_an_html_view() -> None:
    from IPython.utils.dir2 import get_real_method

    sig = sf.make_signature("question -> answer: int").with_instructions("Answer <briefly>.")
    show = get_real_method(sig, "_repr_html_")  # what IPython calls for a class object
    assert show is not None
    page = show()
    assert "Answer &lt;briefly&gt;." in page
    assert re.search(r"question</td><td[^>]*>input</td><td[^>]*><code>str</code>", page)
    assert re.search(r"answer</td><td[^>]*>output</td><td[^>]*><code>int</code>", page)


def test_trajectories_have_an_html_view() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    lm = ScriptedLM(
        [
            Completion(text="", tool_calls=(ToolCall("add", {"a": 2, "b": 3}, "c1"),)),
            Completion(text="", tool_calls=(ToolCall("finish", {"answer": 5}, "c2"),)),
        ],
        features={"tools", "stop", "json_object"},
    )
    pred = sf.Agent("question -> answer: int", tools=[add], lm=lm)(question="2+3?")
    page = pred.trajectory._repr_html_()
    assert "Trajectory" in page and "completed" in page
    assert "<code>add</code>" in page and "success" in page
    assert re.search(r">a</td><td[^>]*>2</td>", page)  # arguments as a table
