"""``CommandTool``: run programs (tests, linters, builds) with arguments chosen by the LM, safely.

::

    class PytestArgs(BaseModel):
        path: str = Field(description="test file or directory")

    run_tests = sf.CommandTool(
        "run_tests", "Run the test suite on a path.",
        commands=[["pytest", "-q", "${path}"]],
        args=PytestArgs,
    )

Commands are argv lists run without a shell, in order, as asyncio subprocesses. A ``${name}``
placeholder is filled from the validated arguments (or from ``env(args)``, for derived values such
as a temp dir) and its value always stays inside the one argv element that holds it, so an argument
can never become a second command or extra arguments. A value that would start an element and
looks like an option (``--output=...``) is refused, since the program would read it as one. Each
command has a timeout and bounded output capture; exit code 0 runs the next command, anything else
is an error result and the remaining commands are skipped. Command tools require approval unless
``requires_approval=False``.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sigform.errors import ToolError, shorten
from sigform.tools._invoke import call_inline
from sigform.tools.result import ToolResult
from sigform.tools.tool import ApprovalRule, Hook, Tool

__all__ = ["CommandOutput", "CommandTool"]

_PLACEHOLDER = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NUMBER = re.compile(r"^-\d+(\.\d+)?([eE][-+]?\d+)?$")
_KEEP_TAIL = 4096  # of a truncated stream, keep the end too: errors are usually printed last


@dataclass(frozen=True)
class CommandOutput:
    """What one command did: its argv, exit code (None if it timed out) and captured output."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def render(self) -> str:
        """A compact transcript: the command line, its status and any output."""
        status = "timed out" if self.timed_out else f"exit code {self.returncode}"
        parts = [f"$ {_quote(self.argv)}  ({status})"]
        if self.stdout.strip():
            parts.append(f"stdout:\n{self.stdout.rstrip()}")
        if self.stderr.strip():
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        return "\n".join(parts)


def _quote(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def placeholders(commands: Sequence[Sequence[str]]) -> set[str]:
    """Every ``${name}`` used in ``commands``."""
    return {m.group(1) for cmd in commands for arg in cmd for m in _PLACEHOLDER.finditer(arg) if m.group(1)}


def _stringify(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float, Path)):
        text = str(value)
    elif hasattr(value, "value") and isinstance(value.value, (str, int)):  # enums
        text = str(value.value)
    else:
        raise ValueError(
            f"argument `{name}` is a {type(value).__name__}; only text, numbers and paths fit in a command"
        )
    if "\x00" in text:
        raise ValueError(f"argument `{name}` contains a NUL byte")
    return text


def fill(template: Sequence[str], values: Mapping[str, Any]) -> list[str]:
    """Fill ``${name}`` placeholders; each argv element stays exactly one element.

    Raises ValueError for a missing value, a non-scalar value or a value that makes an element
    start with '-' (an option) when the template does not.
    """
    argv: list[str] = []
    for element in template:

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name is None:  # "$$" escapes a literal "$"
                return "$"
            if name not in values:
                raise ValueError(f"no value for placeholder ${{{name}}}")
            return _stringify(name, values[name])

        filled = _PLACEHOLDER.sub(replace, element)
        # a leading '-' the template does not write itself came from a value: the program would
        # read the element as an option (whether the value fills all of it or only its start)
        if filled.startswith("-") and not element.startswith("-") and not _NUMBER.match(filled):
            raise ValueError(
                f"argument {filled!r} (from {element!r}) starts with '-' and would be read as an option "
                "by the program; use a value without a leading '-'"
            )
        argv.append(filled)
    return argv


async def _read_bounded(stream: asyncio.StreamReader | None, limit: int) -> tuple[str, int]:
    """Read a stream to its end keeping at most ``limit`` bytes (head and tail); drop the rest."""
    if stream is None:
        return "", 0
    head = bytearray()
    tail = bytearray()
    dropped = 0
    tail_size = min(_KEEP_TAIL, limit // 2)
    head_size = limit - tail_size
    while chunk := await stream.read(65536):
        room = head_size - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            tail += chunk
            if len(tail) > tail_size:
                dropped += len(tail) - tail_size
                del tail[: len(tail) - tail_size]
    text = head.decode("utf-8", "replace")
    if dropped:
        text += f"\n... [{dropped} bytes omitted] ...\n"
    return text + tail.decode("utf-8", "replace"), dropped


def _kill(proc: asyncio.subprocess.Process) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: children of a test runner too
        else:  # pragma: no cover - Windows
            proc.kill()
    except ProcessLookupError:
        pass


async def run_command(
    argv: Sequence[str],
    *,
    timeout: float,
    max_output: int,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandOutput:
    """Run one argv without a shell; capture bounded output; kill it (and its children) on timeout."""
    posix = hasattr(os, "killpg")
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=posix,  # its own process group, so a timeout kills its children too
    )

    async def communicate() -> tuple[str, str, int]:
        (out, _), (err, _), code = await asyncio.gather(
            _read_bounded(proc.stdout, max_output), _read_bounded(proc.stderr, max_output), proc.wait()
        )
        return out, err, code

    task = asyncio.ensure_future(communicate())
    try:
        out, err, code = await asyncio.wait_for(asyncio.shield(task), timeout)
        return CommandOutput(tuple(argv), code, out, err)
    except asyncio.TimeoutError:
        _kill(proc)
        try:  # the pipes close once the group is dead; bounded in case a grandchild escaped it
            out, err, _ = await asyncio.wait_for(task, 5.0)
        except asyncio.TimeoutError:
            out, err = "", ""
        return CommandOutput(tuple(argv), None, out, err, timed_out=True)
    except asyncio.CancelledError:
        _kill(proc)
        task.cancel()
        raise


class CommandTool(Tool):
    """A tool that runs one or more commands (argv lists) as subprocesses, in order.

    Args:
        name, description: what the LM sees.
        commands: argv lists with ``${name}`` placeholders, e.g. ``[["pytest", "-q", "${path}"]]``.
        args: the pydantic model of the LM's arguments (placeholders name its fields).
        env: ``(args) -> dict`` of extra placeholder values derived from the arguments.
        timeout: seconds per command before it is killed (its error result says so).
        max_output: bytes of stdout and of stderr kept per command (head and tail).
        cwd: working directory of the commands.
        process_env: environment variables of the commands (default: inherited).
        requires_approval: default True -- running programs is what people want to see first.
        Other keywords as for :class:`Tool`.
    """

    def __init__(
        self,
        name: str,
        description: str,
        commands: Sequence[Sequence[str]],
        args: type[BaseModel] | None = None,
        *,
        env: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
        timeout: float = 120.0,
        max_output: int = 64_000,
        cwd: str | os.PathLike[str] | None = None,
        process_env: Mapping[str, str] | None = None,
        requires_approval: ApprovalRule = True,
        system_prompt: str | None = None,
        setup: Hook | None = None,
        on_exit: Hook | None = None,
        handlers_once: bool = False,
        describe: Callable[[dict[str, Any]], str] | None = None,
        safe: bool = False,
    ) -> None:
        if isinstance(commands, (str, bytes)) or not commands:
            raise ToolError(f"CommandTool {name!r}: commands must be a non-empty list of argv lists")
        checked: list[tuple[str, ...]] = []
        for i, cmd in enumerate(commands):
            if isinstance(cmd, (str, bytes)) or not cmd or not all(isinstance(a, str) for a in cmd):
                raise ToolError(
                    f"CommandTool {name!r}: command #{i + 1} must be a non-empty list of strings "
                    f"(an argv, no shell), got {cmd!r}"
                )
            checked.append(tuple(cmd))
        if args is None:
            args = _empty_args_model(name)
        self.commands: tuple[tuple[str, ...], ...] = tuple(checked)
        self.env = env
        if timeout <= 0 or max_output <= 0:
            raise ToolError(f"CommandTool {name!r}: timeout and max_output must be positive")
        self.timeout = float(timeout)
        self.max_output = int(max_output)
        self.cwd = cwd
        self.process_env = process_env
        super().__init__(
            self._run_commands,
            name=name,
            description=description,
            requires_approval=requires_approval,
            args=args,
            system_prompt=system_prompt,
            setup=setup,
            on_exit=on_exit,
            handlers_once=handlers_once,
            describe=describe,
            safe=safe,
        )
        missing = placeholders(self.commands) - set(self.args_model.model_fields)
        if missing and env is None:
            raise ToolError(
                f"CommandTool {name!r}: placeholder(s) {sorted(missing)} are neither fields of "
                f"{self.args_model.__name__} nor provided by env=..."
            )

    def argv_for(self, args: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> list[list[str]]:
        """The concrete argv of every command for validated ``args`` (raises ValueError when unfillable)."""
        values = {**args, **(extra or {})}
        return [fill(cmd, values) for cmd in self.commands]

    def describe_call(self, args: Mapping[str, Any]) -> str:
        """Default approval text: the exact commands that will run."""
        if self._describe is not None:
            return super().describe_call(args)
        preview = {name: f"${{{name}}}" for name in placeholders(self.commands) if name not in args}
        try:  # env() values are only known at run time: shown as their placeholders
            lines = [_quote(argv) for argv in self.argv_for(args, preview)]
        except ValueError as exc:
            return f"{self.name}: cannot build the command ({exc})"
        return f"{self.name} will run:\n" + "\n".join(f"  $ {line}" for line in lines)

    async def _run_commands(self, **args: Any) -> ToolResult:
        extra: Mapping[str, Any] = {}
        if self.env is not None:
            try:
                extra = dict(await call_inline(self.env, dict(args)))
            except Exception as exc:
                return ToolResult.error(f"env() of tool `{self.name}` failed: {type(exc).__name__}: {exc}")
        try:
            argvs = self.argv_for(args, extra)
        except ValueError as exc:
            return ToolResult.error(str(exc))
        outputs: list[CommandOutput] = []
        for argv in argvs:
            try:
                out = await run_command(
                    argv, timeout=self.timeout, max_output=self.max_output, cwd=self.cwd, env=self.process_env
                )
            except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
                transcript = "\n\n".join(o.render() for o in outputs)
                message = f"cannot run {shorten(_quote(argv), 200)}: {exc.strerror or exc}"
                return ToolResult(
                    "error",
                    value=outputs,
                    message=message,
                    llm_text=f"{transcript}\n\nError: {message}".strip(),
                )
            outputs.append(out)
            if not out.ok:
                transcript = "\n\n".join(o.render() for o in outputs)
                why = (
                    f"timed out after {self.timeout:g}s"
                    if out.timed_out
                    else f"exited with code {out.returncode}"
                )
                skipped = len(argvs) - len(outputs)
                note = f"; {skipped} later command(s) skipped" if skipped else ""
                message = f"`{_quote(argv)}` {why}{note}"
                return ToolResult(
                    "error", value=outputs, message=message, llm_text=f"{transcript}\n\nError: {message}"
                )
        transcript = "\n\n".join(o.render() for o in outputs)
        return ToolResult.success(outputs, for_llm=transcript)


def _empty_args_model(name: str) -> type[BaseModel]:
    from pydantic import ConfigDict, create_model

    return create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"))
