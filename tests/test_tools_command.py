"""CommandTool: placeholders stay one argv element, no shell, ordered commands, timeouts, bounded output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

import sigform as sf
from sigform.errors import ToolError
from sigform.tools import CommandOutput, CommandTool
from sigform.tools.command import fill, placeholders

PY = sys.executable


class EchoArgs(BaseModel):
    text: str = Field(description="what to print")


def echo_tool(**kw: object) -> CommandTool:
    return CommandTool(
        "echo_text",
        "Print a text.",
        commands=[[PY, "-c", "import sys; print(sys.argv[1:])", "${text}"]],
        args=EchoArgs,
        requires_approval=False,
        **kw,  # type: ignore[arg-type]
    )


def test_public_name_and_defaults():
    tool = echo_tool()
    assert sf.CommandTool is CommandTool
    assert CommandTool("t", "d", [["true"]]).requires_approval is True  # approval by default
    assert tool.parameters["properties"]["text"]["description"] == "what to print"
    assert tool.to_openai()["function"]["description"] == "Print a text."


def test_placeholder_value_is_exactly_one_argv_element_and_never_a_shell():
    hostile = "a b; rm -rf / && echo $(whoami) `id` | cat > x"
    result = echo_tool().run(text=hostile)
    assert result.ok, result.for_llm
    outputs = result.value
    assert isinstance(outputs[0], CommandOutput)
    assert outputs[0].stdout.strip() == repr([hostile])  # one argument, printed verbatim
    assert outputs[0].argv[-1] == hostile


def test_fill_rules():
    assert fill(["--path=${p}", "${p}:${p}", "$${p}"], {"p": "a b"}) == ["--path=a b", "a b:a b", "${p}"]
    assert fill(["${n}", "${flag}"], {"n": -3, "flag": True}) == ["-3", "true"]
    with pytest.raises(ValueError, match="option"):
        fill(["git", "log", "${ref}"], {"ref": "--output=/etc/passwd"})
    with pytest.raises(ValueError, match="only text"):
        fill(["${x}"], {"x": ["a", "b"]})
    with pytest.raises(ValueError, match="NUL"):
        fill(["${x}"], {"x": "a\x00b"})
    with pytest.raises(ValueError, match="no value"):
        fill(["${x}"], {})
    assert placeholders([["a", "${x}-${y}"], ["${z}"]]) == {"x", "y", "z"}


def test_option_like_argument_is_an_error_result_not_a_run(tmp_path: Path):
    marker = tmp_path / "ran"
    tool = CommandTool(
        "touch_it",
        "d",
        [[PY, "-c", f"open({str(marker)!r}, 'w')", "${text}"]],
        args=EchoArgs,
        requires_approval=False,
    )
    result = tool.run(text="--evil")
    assert result.status == "error" and "would be read as an option" in result.message
    assert not marker.exists()


def test_unknown_placeholder_is_refused_at_definition():
    with pytest.raises(ToolError, match=r"\['nope'\]"):
        CommandTool("t", "d", [["echo", "${nope}"]], args=EchoArgs)
    with pytest.raises(ToolError, match="argv"):
        CommandTool("t", "d", ["echo hi"], args=EchoArgs)  # type: ignore[list-item]
    with pytest.raises(ToolError, match="non-empty"):
        CommandTool("t", "d", [], args=EchoArgs)


def test_env_provides_derived_values(tmp_path: Path):
    class Args(BaseModel):
        code: str

    tool = CommandTool(
        "run_code",
        "Write code to a temp file and run it.",
        commands=[
            [PY, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", "${file}", "${code}"],
            [PY, "${file}"],
        ],
        args=Args,
        env=lambda args: {"file": str(tmp_path / "snippet.py")},
        requires_approval=False,
    )
    result = tool.run(code="print(6 * 7)")
    assert result.ok, result.for_llm
    assert [o.returncode for o in result.value] == [0, 0]
    assert result.value[1].stdout.strip() == "42"
    assert "42" in result.for_llm


def test_nonzero_exit_stops_the_remaining_commands(tmp_path: Path):
    marker = tmp_path / "third"
    tool = CommandTool(
        "steps",
        "d",
        commands=[
            [PY, "-c", "print('one')"],
            [PY, "-c", "import sys; print('bad thing', file=sys.stderr); sys.exit(3)"],
            [PY, "-c", f"open({str(marker)!r}, 'w')"],
        ],
        requires_approval=False,
    )
    result = tool.run()
    assert result.status == "error"
    assert "exited with code 3" in result.message and "1 later command(s) skipped" in result.message
    assert [o.returncode for o in result.value] == [0, 3]
    assert "bad thing" in result.for_llm and "one" in result.for_llm
    assert not marker.exists()


def test_timeout_kills_the_command():
    tool = CommandTool(
        "sleeper",
        "d",
        [[PY, "-c", "import time; print('start', flush=True); time.sleep(30)"]],
        timeout=0.5,
        requires_approval=False,
    )
    result = tool.run()
    assert result.status == "error"
    assert "timed out after 0.5s" in result.message
    assert result.value[0].timed_out and result.value[0].returncode is None
    assert "start" in result.value[0].stdout


def test_output_is_bounded_keeping_head_and_tail():
    tool = CommandTool(
        "loud",
        "d",
        [[PY, "-c", "import sys; sys.stdout.write('A' * 50000 + 'THE END')"]],
        max_output=2000,
        requires_approval=False,
    )
    out = tool.run().value[0].stdout
    assert len(out) < 2200
    assert out.startswith("AAAA") and out.endswith("THE END")
    assert "bytes omitted" in out


def test_missing_program_is_an_error_result():
    tool = CommandTool("ghost", "d", [["sigform-no-such-program-xyz"]], requires_approval=False)
    result = tool.run()
    assert result.status == "error" and "cannot run" in result.message


def test_approval_description_shows_the_exact_commands():
    tool = CommandTool(
        "t",
        "d",
        [["pytest", "-q", "${text}"], ["echo", "${tmp}"]],
        args=EchoArgs,
        env=lambda a: {"tmp": "/x"},
    )
    text = tool.describe_call({"text": "tests/a b.py"})
    assert "$ pytest -q 'tests/a b.py'" in text
    assert "${tmp}" in text  # env values are only known at run time
    custom = CommandTool("t", "d", [["true"]], describe=lambda args: "Run true?")
    assert custom.describe_call({}) == "Run true?"
