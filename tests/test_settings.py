"""Settings are declared once, typed (``sigform.settings.Settings``): an unknown name is a clear
error at run time (its type error is in tests/typing/user_mistakes.py)."""

from __future__ import annotations

import typing
from typing import Any

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


@pytest.mark.parametrize(
    ("setting", "value", "takes"),
    [
        ("cache_dir", 5, "takes a folder (str, PathLike) or None; got int 5"),
        ("cache", "no", "takes True or False; got str 'no'"),  # truthy: the cache stayed on
        ("native_reasoning", "no", "takes True or False; got str 'no'"),
        ("num_threads", "4", "takes a positive int or None; got str '4'"),
        ("num_threads", True, "takes a positive int or None; got bool True"),
        ("cache_size_limit", "1GB", "takes a number of bytes (int >= 0) or None; got str '1GB'"),
        ("max_errors", -1, "takes an int >= 0 or None; got int -1"),
        ("unknown_inputs", "warning", "takes 'error', 'warn' or 'ignore'; got str 'warning'"),
        ("callbacks", print, "takes a list of sigform.hooks.Callback objects"),
    ],
)
def test_a_setting_of_the_wrong_type_is_refused_naming_it(setting: str, value: object, takes: str) -> None:
    with pytest.raises(sf.ParameterError) as info:
        sf.configure(**{setting: value})
    assert str(info.value).startswith(f"configure(): setting `{setting}` {takes}")
    with pytest.raises(sf.ParameterError) as info, sf.context(**{setting: value}):
        pass
    assert str(info.value).startswith(f"context(): setting `{setting}` {takes}")
    assert get_setting(setting, "unset") == "unset"


def test_settings_of_the_right_types_are_taken(tmp_path: Any) -> None:
    good = {"cache_dir": tmp_path, "cache": False, "cache_disk": True, "num_threads": 2, "max_errors": 0,
            "cache_size_limit": None, "cache_memory_entries": 10, "unknown_inputs": "warn", "callbacks": (),
            "prompt_cache": True, "native_reasoning": False, "parallel_tools": True}
    with sf.context(**good):
        assert {name: get_setting(name) for name in good} == good
