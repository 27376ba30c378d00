"""Every adapter words a hint for every supported output type: no template falls through to 'None'."""

from __future__ import annotations

import datetime
import decimal
import uuid
from enum import Enum
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

import sigform as sf


class Point(BaseModel):
    x: int
    y: int


class Color(Enum):
    RED = "red"


TYPES = [
    str,
    int,
    float,
    bool,
    datetime.date,
    datetime.datetime,
    datetime.time,
    decimal.Decimal,
    uuid.UUID,
    Any,
    Literal["a", "b"],
    Color,
    list[int],
    tuple[int, str],
    set[str],
    dict[str, int],
    Point,
    Optional[datetime.date],
    Optional[Point],
]


@pytest.mark.parametrize(
    "adapter", [sf.ChatAdapter(), sf.JSONAdapter(), sf.XMLAdapter(), sf.TwoStepAdapter()]
)
@pytest.mark.parametrize("annotation", TYPES, ids=lambda t: getattr(t, "__name__", str(t)))
def test_system_message_words_every_type(adapter, annotation):
    sig = sf.make_signature({"q": (str, sf.InputField()), "out": (annotation, sf.OutputField())})
    system = adapter.format(sig, [], {"q": "?"})[0]["content"]
    assert "schema None" not in system and "schema null" not in system
    assert "<None>" not in system and ">None<" not in system


def test_dates_are_hinted_in_iso_form():
    sig = sf.make_signature({"q": (str, sf.InputField()), "when": (datetime.date, sf.OutputField())})
    for adapter in (sf.ChatAdapter(), sf.XMLAdapter()):
        assert "YYYY-MM-DD" in adapter.format(sig, [], {"q": "?"})[0]["content"]
