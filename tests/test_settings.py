"""Settings are declared once, typed (``sigform.settings.Settings``): an unknown name is a clear
error at run time (its type error is in tests/typing/user_mistakes.py)."""

from __future__ import annotations

import typing

import pytest

import sigform as sf
from sigform.errors import ParameterError
from sigform.settings import SettingName, Settings, current_settings, get_setting


def test_every_declared_setting_can_be_read_by_name() -> None:
    assert set(typing.get_args(SettingName)) == set(Settings.__annotations__)


def test_a_misspelled_setting_is_an_error_naming_the_close_one() -> None:
    close = r"configure\(\): unknown setting `num_thread` \(did you mean `num_threads`\?\)"
    with pytest.raises(ParameterError, match=close):
        sf.configure(num_thread=4)  # type: ignore[call-arg]
    assert "num_thread" not in current_settings()


def test_a_request_option_as_a_setting_says_where_it_goes() -> None:
    with pytest.raises(ParameterError, match=r"unknown setting `temperature`.*goes to the LM") as info:
        sf.context(temperature=0).__enter__()  # type: ignore[call-arg]
    assert "`lm`" in str(info.value) and "`unknown_inputs`" in str(info.value)


def test_a_scoped_setting_is_read_back_and_then_gone() -> None:
    with sf.context(max_errors=3):
        assert get_setting("max_errors") == 3
    assert get_setting("max_errors", "unset") == "unset"
