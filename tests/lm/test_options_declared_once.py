"""LM options are declared once (:class:`sigform.lm.options.LMOptions`, issue 16 item 2): every
option reaches ``lm.options``, survives ``copy()``, is inherited by ``LM()`` from the configured
LM, and a saved program keeps exactly the options it always kept."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

import sigform as sf
from sigform.hooks import Callback
from sigform.lm import LM
from sigform.lm.options import LMOptions
from sigform.lm.rate_limit import TokenBucket
from sigform.testing import ScriptedBackend

# a value other than the default for every option
NON_DEFAULT: dict[str, Any] = {
    "cache": False,
    "num_retries": 1,
    "timeout": 7.5,
    "fast_path": True,
    "strict": True,
    "callbacks": (Callback(),),
    "history_size": 5,
    "retry_delay": 0.1,
    "headers": {"X-Team": "qa"},
    "capabilities": {"tools": True},
    "prompt_cache": True,
    "prune": False,
    "backend": ScriptedBackend(["ok"]),
    "rpm": 600.0,
    "tpm": 90_000.0,
    "rate_limit": TokenBucket(rpm=30),
    "model_type": "text",
}


def test_every_option_has_a_non_default_value_here() -> None:
    # a new option must be added above, so that the checks below cover it
    assert set(NON_DEFAULT) == {f.name for f in fields(LMOptions)}


def _lm(**extra: Any) -> LM:
    return LM("openai/x", api_base="http://127.0.0.1:9/v1", temperature=0.3, **NON_DEFAULT, **extra)


def test_options_are_read_back_from_lm_options() -> None:
    lm = _lm()
    for name, value in NON_DEFAULT.items():
        assert getattr(lm.options, name) == value, name
        assert getattr(lm, name) == value, name  # the old attribute reads still work
    assert lm.kwargs == {"temperature": 0.3}  # options are never request defaults
    assert lm.history.maxlen == 5


def test_copy_keeps_every_option_and_applies_overrides() -> None:
    lm = _lm()
    assert lm.copy().options == lm.options
    changed = lm.copy(num_retries=0, temperature=0.9)
    assert changed.options == LMOptions(**{**NON_DEFAULT, "num_retries": 0})
    assert changed.kwargs == {"temperature": 0.9}


def test_lm_without_a_model_inherits_every_option_of_the_configured_lm() -> None:
    with sf.context(lm=_lm()):
        inherited = LM(timeout=3.0)
    assert inherited.model == "openai/x" and inherited.kwargs == {"temperature": 0.3}
    assert inherited.options == LMOptions(**{**NON_DEFAULT, "timeout": 3.0})


def test_options_object_and_keywords_combine() -> None:
    lm = LM("openai/x", options=LMOptions(cache=False, num_retries=0), num_retries=2)
    assert (lm.options.cache, lm.options.num_retries) == (False, 2)


def test_setting_an_option_attribute_sets_the_option() -> None:
    lm = LM("openai/x")
    lm.prompt_cache = True
    assert lm.options.prompt_cache is True
    with pytest.raises(sf.InputError, match="num_retries"):
        lm.num_retries = -1


def test_callers_later_edits_do_not_reach_the_options() -> None:
    headers = {"X-A": "1"}
    lm = LM("openai/x", headers=headers)
    headers["X-B"] = "2"
    assert lm.options.headers == {"X-A": "1"}


def test_a_saved_lm_keeps_the_same_options_as_before() -> None:
    state = _lm().dump_state()
    saved = {k: v for k, v in state.items() if k not in ("model", "kwargs", "api_base")}
    assert saved == {
        "cache": False,
        "num_retries": 1,
        "timeout": 7.5,
        "fast_path": True,
        "strict": True,
        "capabilities": {"tools": True},
        "prompt_cache": True,
        "rpm": 600.0,  # the rate limits (issue 15): numbers only, never the limiter object
        "tpm": 90_000.0,
        "model_type": "text",  # a base model's mode (issue 24)
    }
    plain = LM("openai/x").dump_state()
    assert "model_type" not in plain  # only when set: unset, it is detected
    assert "capabilities" not in plain and "prompt_cache" not in plain  # only when set
    assert "rpm" not in plain and "tpm" not in plain
    assert LM("openai/x", prompt_cache=False).dump_state()["prompt_cache"] is False
    assert LM.load_state(state).options.num_retries == 1
