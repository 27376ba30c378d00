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
looks like an option (``--output=...``, ``-1``, ``-1e5``) or an options file (``@notes.txt``)
is refused, since the program would read it as one; a negative number is let through only for an
argument the tool declares numeric (an ``int``, ``float`` or ``Decimal`` field). Each command has a
timeout and bounded output capture; exit code 0 runs the next command, anything else is an error
result and the remaining commands are skipped. Command tools require approval unless
``requires_approval=False``.

A command's run ends with all its processes: on Linux, those it started that are still running
when it exits, times out or is cancelled are killed too, even after ``setsid()`` (see
:mod:`sigform.tools.process` for what can escape).
"""

from __future__ import annotations

import os
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sigform.errors import ToolError
from sigform.excerpt import shorten
from sigform.tools._invoke import call_inline
from sigform.tools.display import shell_line
from sigform.tools.process import CommandOutput, run_command
from sigform.tools.result import ToolResult
from sigform.tools.tool import ApprovalRule, Hook, Tool

__all__ = ["CommandOutput", "CommandTool"]

_PLACEHOLDER = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NUMERIC_TYPES = (int, float, Decimal)
_NUMBER = re.compile(r"^-\d+(\.\d+)?([eE][-+]?\d+)?$")


def placeholders(commands: Sequence[Sequence[str]]) -> set[str]:
    """Every ``${name}`` used in ``commands``."""
    return {m.group(1) for cmd in commands for arg in cmd for m in _PLACEHOLDER.finditer(arg) if m.group(1)}


def _stringify(name: str, value: object) -> str:
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


def numeric_fields(model: type[BaseModel]) -> frozenset[str]:
    """Fields of ``model`` declared as numbers (``int``, ``float``, ``Decimal``, optionally None):
    the only arguments whose value may start an argv element with '-' (``-1``, ``-2.5e3``)."""

    def numeric(annotation: object) -> bool:
        if isinstance(annotation, type):
            return issubclass(annotation, _NUMERIC_TYPES) and not issubclass(annotation, bool)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            return bool(members) and all(numeric(a) for a in members)
        return False

    return frozenset(name for name, field in model.model_fields.items() if numeric(field.annotation))


def _negative_number(
    element: str, filled: str, values: Mapping[str, object], numeric: Collection[str]
) -> bool:
    """``element`` is one placeholder of a declared-numeric argument whose value is a negative number."""
    match = _PLACEHOLDER.fullmatch(element)
    if match is None or match.group(1) not in numeric:
        return False
    value = values[match.group(1)]
    return isinstance(value, _NUMERIC_TYPES) and not isinstance(value, bool) and bool(_NUMBER.match(filled))


def fill(template: Sequence[str], values: Mapping[str, object], numeric: Collection[str] = ()) -> list[str]:
    """Fill ``${name}`` placeholders; each argv element stays exactly one element.

    Raises ValueError for a missing value, a non-scalar value or a value that makes an element
    start with '-' (an option) when the template does not. A negative number is allowed only as
    the whole element, from an argument named in ``numeric`` whose value is a number.
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
        # read the element as an option (whether the value fills all of it or only its start);
        # "-1" too (`ls -1`, `head -5`), unless the tool declared the argument a number
        if (
            filled.startswith("-")
            and not element.startswith("-")
            and not _negative_number(element, filled, values, numeric)
        ):
            raise ValueError(
                f"argument {filled!r} (from {element!r}) starts with '-' and would be read as an option "
                "by the program; use a value without a leading '-'"
            )
        # a leading '@' from a value names a file of options for many programs (pytest, gcc,
        # javac, argparse's fromfile_prefix_chars): `@notes.txt` would read options from it. A
        # template that means a literal '@' writes it itself (`@${scope}/${name}`)
        if filled.startswith("@") and not element.startswith("@"):
            raise ValueError(
                f"argument {filled!r} (from {element!r}) starts with '@', which many programs read as "
                "'take options from this file'; use a value without a leading '@' (for a path: ./@name)"
            )
        argv.append(filled)
    return argv


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
        env: Callable[[dict[str, Any]], Mapping[str, object]] | None = None,
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
        self._numeric = numeric_fields(self.args_model)
        missing = placeholders(self.commands) - set(self.args_model.model_fields)
        if missing and env is None:
            raise ToolError(
                f"CommandTool {name!r}: placeholder(s) {sorted(missing)} are neither fields of "
                f"{self.args_model.__name__} nor provided by env=..."
            )

    def argv_for(
        self, args: Mapping[str, object], extra: Mapping[str, object] | None = None
    ) -> list[list[str]]:
        """The concrete argv of every command for validated ``args`` (raises ValueError when unfillable)."""
        values = {**args, **(extra or {})}
        numeric = self._numeric - set(extra or ())  # env() values are never declared numbers
        return [fill(cmd, values, numeric) for cmd in self.commands]

    def describe_call(self, args: Mapping[str, object]) -> str:
        """Default approval text: the exact commands that will run."""
        if self._describe is not None:
            return super().describe_call(args)
        preview = {name: f"${{{name}}}" for name in placeholders(self.commands) if name not in args}
        try:  # env() values are only known at run time: shown as their placeholders
            lines = [shell_line(argv) for argv in self.argv_for(args, preview)]
        except ValueError as exc:
            return f"{self.name}: cannot build the command ({exc})"
        return f"{self.name} will run:\n" + "\n".join(f"  $ {line}" for line in lines)

    async def _run_commands(self, **args: object) -> ToolResult:
        extra: Mapping[str, object] = {}
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
                message = f"cannot run {shorten(shell_line(argv), 200)}: {exc.strerror or exc}"
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
                message = f"`{shell_line(argv)}` {why}{note}"
                return ToolResult(
                    "error", value=outputs, message=message, llm_text=f"{transcript}\n\nError: {message}"
                )
        transcript = "\n\n".join(o.render() for o in outputs)
        return ToolResult.success(outputs, for_llm=transcript)


def _empty_args_model(name: str) -> type[BaseModel]:
    from pydantic import ConfigDict, create_model

    return create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"))
