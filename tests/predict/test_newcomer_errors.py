"""Errors a newcomer met (issue 27, findings 17 and 19): each says what to do instead."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import sigform as sf
from sigform.errors import InputError
from sigform.lm.history import inspect_history
from sigform.testing import ScriptedLM


def _program() -> sf.Predict:
    return sf.Predict("ad -> item", lm=ScriptedLM(["[[ ## item ## ]]\nwasher\n[[ ## completed ## ]]"] * 3))


@pytest.mark.parametrize("name, value", [("max_tokens", 20), ("temperature", 0.2), ("cache", False)])
def test_an_lm_setting_passed_as_an_input_points_to_config(name: str, value: object) -> None:
    with pytest.raises(InputError) as info:
        _program()(ad="a washing machine", **{name: value})
    message = str(info.value)
    assert f"unknown input `{name}`" in message and f"config={{{name!r}: {value!r}}}" in message
    assert _program()(ad="a washing machine", config={name: value}).item == "washer"  # the pointer works


def test_a_misspelt_input_still_gets_did_you_mean_and_other_names_no_config_hint() -> None:
    with pytest.raises(InputError, match=r"unknown input `adv` \(did you mean `ad`\?\)"):
        _program()(adv="x")
    with pytest.raises(InputError) as info:
        _program()(ad="x", colour="red")
    assert "config=" not in str(info.value)


@pytest.mark.parametrize("typo", ["locall", "lcoal", "Local"])
def test_a_typo_of_local_gets_did_you_mean(typo: str) -> None:
    with pytest.raises(ValueError, match="did you mean 'local'"):
        sf.LM(typo)


def test_inspect_history_before_any_call_says_there_is_none() -> None:
    out = io.StringIO()
    inspect_history(entries=[], console=Console(file=out, width=100))
    assert "no history yet" in out.getvalue()
    out = io.StringIO()
    inspect_history(0, entries=[], console=Console(file=out))
    assert "nothing shown" in out.getvalue()


def test_sf_inspect_history_in_a_fresh_process_prints_a_line() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sigform as sf; sf.inspect_history()"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "no history yet" in done.stdout
