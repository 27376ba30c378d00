"""Command tools: a value at the start of an element can never become an option, and is
refused before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from sigform.tools import CommandTool
from sigform.tools.command import fill

PY = sys.executable


def test_a_value_at_the_start_of_an_element_cannot_make_it_an_option() -> None:
    # "${ref}..HEAD" with ref="--output=/tmp/x" gave "--output=/tmp/x..HEAD": git writes the file
    for template in (["git", "log", "${ref}..HEAD"], ["rm", "${name}.txt"], ["x", "${a}${b}"]):
        with pytest.raises(ValueError, match="option"):
            fill(template, {"ref": "--output=/tmp/x", "name": "-rf", "a": "", "b": "-v"})
    # a literal leading dash is the template's own, and a placeholder after it is safe
    assert fill(["--name=${n}", "-${n}"], {"n": "-x"}) == ["--name=-x", "--x"]
    assert fill(["${n}.5"], {"n": 3}) == ["3.5"]
    assert fill(["${n}"], {"n": -2.5}, numeric={"n"}) == ["-2.5"]  # a declared number


def test_command_tool_refuses_the_leading_value_before_running(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Args(BaseModel):
        name: str

    tool = CommandTool(
        "touch",
        "touch",
        [[PY, "-c", f"open({str(marker)!r}, 'w')", "${name}.txt"]],
        Args,
        requires_approval=False,
    )
    result = tool.run(name="--evil")
    assert result.status == "error" and "option" in result.message
    assert not marker.exists()
