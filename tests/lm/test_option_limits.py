"""Settings that cannot work fail at construction, naming the setting (issue 13 item 14): a
negative timeout failed only at call time with a raw ValueError; negative retries were taken as
none; ``True`` for an ``int`` input was sent as 1."""

from __future__ import annotations

import math

import pytest

import sigform as sf
from sigform.lm import LM
from sigform.predict.inputs import InputChecker

MSG = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", -1),
        ("timeout", 0),
        ("timeout", math.nan),
        ("timeout", "30"),
        ("timeout", True),
        ("num_retries", -5),
        ("num_retries", 1.5),
        ("num_retries", True),
        ("retry_delay", -0.1),
    ],
)
def test_impossible_limits_fail_at_construction(option: str, value: object) -> None:
    with pytest.raises(sf.InputError, match=option):
        LM("openai/x", api_base="http://127.0.0.1:9/v1", **{option: value})


def test_impossible_limits_per_call_fail_before_any_request() -> None:
    lm = LM("openai/x", api_base="http://127.0.0.1:9/v1")
    for option, value in (("timeout", -1), ("num_retries", -5)):
        with pytest.raises(sf.InputError, match=option):
            lm(MSG, **{option: value})
    assert lm.history == type(lm.history)(maxlen=lm.history.maxlen)  # nothing was sent


def test_sensible_limits_are_kept() -> None:
    lm = LM("openai/x", timeout=2.5, num_retries=0, retry_delay=0)
    assert (lm.timeout, lm.num_retries, lm.retry_delay) == (2.5, 0, 0)
    assert LM("openai/x", timeout=None).timeout is None


def test_a_bool_for_a_number_input_is_an_input_error() -> None:
    program = sf.Predict("n: int, xs: list[float], ok: bool -> a")
    for inputs in ({"n": True, "xs": [], "ok": True}, {"n": 1, "xs": [1.5, False], "ok": True}):
        with pytest.raises(sf.InputError, match="bool is not a number"):
            program(**inputs)
    checker = InputChecker(program.signature)
    assert checker.check({"n": 3, "xs": [1, 2.5], "ok": False}) == {"n": 3, "xs": [1.0, 2.5], "ok": False}
