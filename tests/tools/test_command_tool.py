"""CommandTool: placeholders stay one argv element, no shell, ordered commands, timeouts, bounded output."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

import sigform as sf
from sigform.errors import ToolError
from sigform.tools import CommandOutput, CommandTool
from sigform.tools.command import fill, placeholders
from sigform.tools.display import shell_line

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
    assert fill(["${n}", "${flag}"], {"n": -3, "flag": True}, numeric={"n"}) == ["-3", "true"]
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


@pytest.mark.parametrize("value", ["@notes.txt", "@", "@@x", "@-"])
def test_an_options_file_argument_is_an_error_result_not_a_run(tmp_path: Path, value: str):
    # pytest, gcc, javac and argparse programs read options from `@file` (issue 27, finding 3):
    # `pytest -q @notes.txt` could write a junit file anywhere or empty a --basetemp folder
    marker = tmp_path / "ran"
    tool = CommandTool(
        "touch_it",
        "d",
        [[PY, "-c", f"open({str(marker)!r}, 'w')", "${text}"]],
        args=EchoArgs,
        requires_approval=False,
    )
    result = tool.run(text=value)
    assert result.status == "error" and "starts with '@'" in result.message
    assert not marker.exists()


def test_an_at_sign_the_template_writes_or_inside_a_value_is_kept():
    assert fill(["npm", "view", "@${scope}/${name}"], {"scope": "types", "name": "node"}) == [
        "npm",
        "view",
        "@types/node",
    ]
    assert fill(["git", "show", "${ref}"], {"ref": "main@{1}"}) == ["git", "show", "main@{1}"]
    assert fill(["ls", "./${path}"], {"path": "@notes.txt"}) == ["ls", "./@notes.txt"]
    with pytest.raises(ValueError, match="starts with '@'"):
        fill(["pytest", "${a}${b}"], {"a": "", "b": "@opts"})


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


class CountArgs(BaseModel):
    count: int


class ScaleArgs(BaseModel):
    scale: float | None = None


@pytest.mark.parametrize("value", ["-1", "-1e5", "-2.5", "-0"])
def test_negative_number_text_is_an_option_for_a_text_argument(tmp_path: Path, value: str):
    # `ls -1` ran: a '-1' from the model is an option for most programs (ls -1, head -5, git log -3)
    marker = tmp_path / "ran"
    tool = CommandTool(
        "list_it",
        "d",
        [[PY, "-c", f"open({str(marker)!r}, 'w')", "${text}"]],
        args=EchoArgs,
        requires_approval=False,
    )
    result = tool.run(text=value)
    assert result.status == "error" and "would be read as an option" in result.message
    assert not marker.exists()
    with pytest.raises(ValueError, match="option"):
        fill(["ls", "${n}"], {"n": -1})  # a number is refused too unless the argument is declared numeric


def test_negative_number_passes_for_a_declared_numeric_argument():
    show = [PY, "-c", "import sys; print(sys.argv[1:])"]
    count = CommandTool("tail_n", "d", [[*show, "${count}"]], args=CountArgs, requires_approval=False)
    result = count.run(count=-1)
    assert result.ok, result.for_llm
    assert result.value[0].argv[-1] == "-1"
    scale = CommandTool("scale", "d", [[*show, "${scale}"]], args=ScaleArgs, requires_approval=False)
    assert scale.run(scale=-1e5).value[0].argv[-1] == "-100000.0"
    # a declared number that is not written as digits ("-inf") would still read as options -i -n -f
    refused = scale.run(scale="-inf")
    assert refused.status == "error" and "would be read as an option" in refused.message
    # only the whole element: a numeric value that starts a longer element is refused
    glued = CommandTool("glued", "d", [[*show, "${count}x"]], args=CountArgs, requires_approval=False)
    assert glued.run(count=-1).status == "error"


def test_approval_text_escapes_control_characters_and_stays_exact():
    tool = CommandTool("t", "d", [["echo", "${text}"]], args=EchoArgs)
    hostile = "safe\x1b[1A\x1b[2K\r$ echo harmless\u202etxt.exe"
    text = tool.describe_call({"text": hostile})
    assert not any(c in text for c in "\x1b\r\u202e")
    # bash's $'...' form reads back to exactly the argument that runs
    assert "$ echo $'safe\\x1b[1A\\x1b[2K\\r$ echo harmless\\u202etxt.exe'" in text
    assert tool.argv_for({"text": hostile}) == [["echo", hostile]]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to read $'...' back")
def test_shown_command_line_reads_back_to_the_exact_arguments_in_bash():
    values = [
        "safe\x1b[1A\x1b[2K\r$ echo harmless\u202etxt.exe",
        "it's a \\ back",
        "tab\there\nnewline",
        "plain",
        "a\x7f\x85\u2028\U000e0041\xa0",
    ]
    line = shell_line(values)
    assert line.isprintable()
    run = subprocess.run(
        ["bash", "-c", 'printf "%s\\0" ' + line], capture_output=True, env={"LANG": "C.UTF-8"}, check=True
    )
    assert run.stdout.decode("utf-8").split("\0")[:-1] == values


# A grandchild that leaves the command's process group and session (setsid), writes its pid and
# sleeps; with `orphan` its parent exits at once, so it is re-parented (a double-forked daemon).
_ESCAPER = """
import os, subprocess, sys, time
pidfile, orphan, then = sys.argv[1], sys.argv[2] == "orphan", sys.argv[3]
code = "import os, sys, time; os.setsid(); open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); "
code += "os.rename(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(60)"
middle = [sys.executable, "-c", "import subprocess, sys; subprocess.Popen(sys.argv[1:])", sys.executable,
          "-c", code, pidfile]
if orphan:
    subprocess.run(middle, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
else:
    subprocess.Popen(middle[3:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("grandchild started", flush=True)
if then == "hang":
    time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _run_escaper(tmp_path: Path, orphan: bool, then: str, timeout: float) -> tuple[sf.ToolResult, int]:
    pidfile = tmp_path / "grandchild.pid"
    tool = CommandTool(
        "escaper",
        "d",
        [[PY, "-c", _ESCAPER, str(pidfile), "orphan" if orphan else "child", then]],
        timeout=timeout,
        requires_approval=False,
    )
    result = tool.run()
    return result, int(pidfile.read_text())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="descendants are tracked on Linux only")
@pytest.mark.parametrize("orphan", [False, True], ids=["setsid-child", "setsid-orphan"])
@pytest.mark.parametrize("then", ["hang", "exit"])
def test_a_command_leaves_no_process_behind_even_after_setsid(tmp_path: Path, orphan: bool, then: str):
    result, pid = _run_escaper(tmp_path, orphan, then, timeout=3.0 if then == "hang" else 30.0)
    try:
        assert "grandchild started" in result.value[0].stdout
        if then == "hang":
            assert result.value[0].timed_out
        else:  # the command exited: what it left running is ended, and the run did not wait for it
            assert result.ok, result.for_llm
        assert not _alive(pid), "a process that called setsid() survived the command"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_missing_program_or_directory_is_reported_as_before(tmp_path: Path):
    missing = CommandTool("ghost", "d", [[str(tmp_path / "nope")]], requires_approval=False).run()
    assert missing.status == "error" and "No such file or directory" in missing.message
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")  # not executable
    denied = CommandTool("denied", "d", [[str(script)]], requires_approval=False).run()
    assert denied.status == "error" and "Permission denied" in denied.message
    elsewhere = CommandTool("cwd", "d", [[PY, "-V"]], cwd=tmp_path / "gone", requires_approval=False).run()
    assert elsewhere.status == "error" and "cannot run" in elsewhere.message


def test_exit_code_and_death_by_signal_are_reported_as_the_command_ended():
    code = CommandTool("c", "d", [[PY, "-c", "raise SystemExit(7)"]], requires_approval=False).run()
    assert code.value[0].returncode == 7
    killed = CommandTool(
        "k",
        "d",
        [[PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]],
        requires_approval=False,
    ).run()
    assert killed.value[0].returncode == -signal.SIGTERM


_ORPHANS = """
import os, sys, time
parent = os.getppid()  # the supervisor
for _ in range(20):  # double fork: each grandchild is re-parented to the supervisor, then exits
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(0.05)
        os._exit(0)
    os.wait()
time.sleep(1.0)
zombies = 0
for entry in os.listdir("/proc"):
    try:
        stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        continue
    zombies += stat[0] == "Z" and int(stat[1]) == parent
print("zombies", zombies)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the supervisor runs on Linux only")
def test_orphans_that_exit_during_a_long_command_are_collected():
    tool = CommandTool("orphans", "d", [[PY, "-c", _ORPHANS]], requires_approval=False)
    result = tool.run()
    assert result.ok, result.for_llm
    assert result.value[0].stdout.split() == ["zombies", "0"]
