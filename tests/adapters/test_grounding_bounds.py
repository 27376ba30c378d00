"""Text-mode grounding (sigform.adapters.grounding) on hostile inputs and answers: it never raises
and stays linear in the size of the inputs."""

from __future__ import annotations

import time
from typing import Optional

from sigform.adapters.grounding import ground_outputs, stated


def _grounded(value: object, text: str) -> object:
    outputs = {"x": value}
    ground_outputs({"x": Optional[int]}, outputs, {"text": text})
    return outputs["x"]


def test_scale_words_without_end_do_not_overflow() -> None:
    # "thousand" 103 times in a row was 1000**103, past any float: OverflowError out of the call
    assert _grounded(5, "thousand " * 400) is None
    assert _grounded(1000, "thousand " * 400) == 1000
    assert _grounded(12, "dozen " * 400) == 12


def test_an_answer_past_any_float_is_no_crash() -> None:
    # a base model repeating a digit: a 400-digit int for an Optional[int] raised OverflowError
    huge = int("9" * 400)
    assert _grounded(huge, "nothing stated") == huge  # not checkable as a float: kept unchecked
    assert stated(-huge, "")


def test_a_long_run_of_digits_is_read_in_linear_time() -> None:
    # the decimal-comma pattern retried from every digit of a run: 40,000 digits took 16 s
    started = time.perf_counter()
    assert _grounded(7, "1234567890" * 20_000) is None
    assert time.perf_counter() - started < 10  # ~0.1 s; only pathological slowness fails
    assert _grounded(12, "price 12,50 or 3,5") is None  # decimal commas still read as such
    assert stated(12.5, "price 12,50") and stated(3.5, "or 3,5")
