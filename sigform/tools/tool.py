"""``Tool``: a Python function the LM may call, with its schema, approval rule and hooks.

::

    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    calc = sf.Tool(add)                      # name "add", description from the docstring
    calc.parameters                          # JSON schema of {a: int, b: int}
    calc.run({"a": 2, "b": "3"})             # ToolResult(status='success', value=5)
    calc.run({"a": "x"})                     # ToolResult(status='error', message="invalid arguments ...")

The function may be sync or async, or a list of step functions (see :mod:`sigform.tools.chain`).
Exceptions raised by the function become error results: the LM reads them and may try again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Union

from pydantic import BaseModel

from sigform.errors import ToolArgumentsError, ToolError
from sigform.excerpt import shorten
from sigform.tools._invoke import call_inline, invoke, run_sync
from sigform.tools.chain import Chain
from sigform.tools.display import escape_controls, shown_value
from sigform.tools.result import ToolResult, as_result
from sigform.tools.schema import (
    args_model_from_function,
    describe_function,
    parameters_schema,
    validate_arguments,
)

__all__ = ["ApprovalRule", "Hook", "Tool"]

logger = logging.getLogger("sigform.tools")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what every function-calling API accepts

ApprovalRule = Union[bool, Callable[["Tool", dict[str, Any]], Any]]
Hook = Callable[["Tool"], Any]


class Tool:
    """A function the LM can call.

    Args:
        func: the function (sync or async), or a list of step functions run as a chain.
        name: the name the LM uses (default: the function's ``__name__``); letters, digits, ``_``, ``-``.
        description: what the tool does (default: the docstring without its ``Args:`` section).
        requires_approval: ``True`` to ask the approver before every call, or a callable
            ``(tool, args) -> bool`` deciding per call (an exception counts as "ask").
        args: a pydantic model for the arguments instead of the function's own signature.
        system_prompt: extra system-prompt text explaining how to use the tool; sent only while
            the tool is offered.
        setup / on_exit: hooks ``(tool) -> None`` (sync or async) run before and after the tool's
            calls; with ``handlers_once=True`` they run once around all calls of this tool in one
            LM turn instead of around each call.
        describe: ``(args) -> str``, the human-readable text shown when asking for approval.
        safe: the tool may run concurrently with other safe calls (when the agent allows it).
    """

    # adapters recognise tools by this marker (they cannot import sigform.tools: it builds on them)
    __sigform_tool__: ClassVar[bool] = True

    def __init__(
        self,
        func: Callable[..., object] | Sequence[Callable[..., object]],
        name: str | None = None,
        description: str | None = None,
        requires_approval: ApprovalRule = False,
        *,
        args: type[BaseModel] | None = None,
        system_prompt: str | None = None,
        setup: Hook | None = None,
        on_exit: Hook | None = None,
        handlers_once: bool = False,
        describe: Callable[[dict[str, Any]], str] | None = None,
        safe: bool = False,
    ) -> None:
        if isinstance(func, Tool):
            raise ToolError(f"{func!r} is already a Tool")
        chain: Chain | None = None
        if isinstance(func, Chain):
            chain = func
        elif isinstance(func, (list, tuple)):
            chain = Chain(func)
        elif not callable(func):
            raise ToolError(f"Tool needs a callable (or a list of step callables), got {type(func).__name__}")
        entry: Callable[..., object] = chain.first if chain is not None else func  # type: ignore[assignment]
        self.func = func
        self._chain = chain
        self.name = _check_name(name if name is not None else getattr(entry, "__name__", ""), entry)
        doc_summary, _ = describe_function(entry)
        self.description = (description if description is not None else doc_summary).strip()
        if args is not None and not (isinstance(args, type) and issubclass(args, BaseModel)):
            raise ToolError(f"tool `{self.name}`: args must be a pydantic BaseModel subclass, got {args!r}")
        self.args_model: type[BaseModel] = args or args_model_from_function(entry, _model_name(self.name))
        self.parameters: dict[str, Any] = parameters_schema(self.args_model)
        if not (isinstance(requires_approval, bool) or callable(requires_approval)):
            raise ToolError(
                f"tool `{self.name}`: requires_approval must be a bool or a callable (tool, args) -> bool"
            )
        self.requires_approval = requires_approval
        self.system_prompt = system_prompt
        self.setup = setup
        self.on_exit = on_exit
        self.handlers_once = handlers_once
        self._describe = describe
        self.safe = safe

    # -- the LM-facing description -------------------------------------------------------------
    def to_openai(self) -> dict[str, object]:
        """The tool in OpenAI function-calling shape (litellm translates it for other providers)."""
        function: dict[str, object] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def format_for_prompt(self) -> str:
        """A plain-text description for prompts of models without native tool calling."""
        import json

        lines = [f"- `{self.name}`: {self.description or '(no description)'}"]
        lines.append(f"  arguments (JSON schema): {json.dumps(self.parameters, ensure_ascii=False)}")
        return "\n".join(lines)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> Any:
        """Let ``list[Tool]`` be a signature input type: tools (or plain functions) are accepted
        and wrapped; serialised as their function-calling spec."""
        from pydantic_core import core_schema

        def validate(value: object) -> Tool:
            try:
                return as_tool(value)
            except ToolError as exc:  # pydantic reports ValueError as a validation error
                raise ValueError(str(exc)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda tool: tool.to_openai()),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: object, handler: object) -> dict[str, Any]:
        return {"type": "object", "description": "a tool the model may call"}

    def __sigform_render__(self) -> str:
        """How a tool is written in a prompt (a ``list[Tool]`` input field of a signature)."""
        return self.format_for_prompt()

    # -- one call ------------------------------------------------------------------------------
    def validate(self, arguments: Mapping[str, object] | str | None) -> dict[str, Any]:
        """Validate the LM's arguments; raises :class:`~sigform.errors.ToolArgumentsError`."""
        return validate_arguments(self.name, self.args_model, arguments)

    async def needs_approval(self, args: Mapping[str, object]) -> bool:
        """Whether this call must be approved first (a failing rule asks, to stay on the safe side)."""
        rule = self.requires_approval
        if isinstance(rule, bool):
            return rule
        try:
            return bool(await call_inline(rule, self, args))
        except Exception:
            logger.warning(
                "requires_approval rule of tool %s raised; asking for approval", self.name, exc_info=True
            )
            return True

    def describe_call(self, args: Mapping[str, object]) -> str:
        """The text a person reads when asked to approve this call."""
        if self._describe is not None:
            try:  # the author's layout (line breaks) is kept; control characters never reach a terminal
                return escape_controls(str(self._describe(dict(args))), keep="\n")
            except Exception:
                logger.warning(
                    "describe() of tool %s raised; using the default text", self.name, exc_info=True
                )
        shown = ", ".join(f"{escape_controls(str(k))}={shorten(shown_value(v), 80)}" for k, v in args.items())
        return f"{self.name}({shown})"

    async def execute(self, args: dict[str, Any]) -> ToolResult:
        """Run the tool on validated ``args`` (no hooks, no approval); exceptions become errors."""
        try:
            if self._chain is not None:
                return await self._chain.run(args)
            return as_result(await invoke(self.func, **args))  # type: ignore[arg-type]
        except Exception as exc:
            logger.debug("tool %s raised", self.name, exc_info=True)
            return ToolResult.error(f"{type(exc).__name__}: {exc}")

    async def arun(self, arguments: Mapping[str, object] | str | None = None, **kwargs: object) -> ToolResult:
        """Validate ``arguments`` and run the tool with its setup/on_exit hooks (no approval).

        Invalid arguments give an error result; nothing raises for a failing tool.
        """
        raw: Any = arguments if arguments is not None else kwargs
        try:
            args = self.validate(raw)
        except ToolArgumentsError as exc:
            return ToolResult.error(str(exc))
        problem = await self.run_hook("setup")
        if problem is not None:
            return ToolResult.error(problem)
        try:
            return await self.execute(args)
        finally:
            await self.run_hook("on_exit")

    def run(self, arguments: Mapping[str, object] | str | None = None, **kwargs: object) -> ToolResult:
        """Synchronous :meth:`arun`."""
        return run_sync(lambda: self.arun(arguments, **kwargs))

    async def run_hook(self, which: str) -> str | None:
        """Run the ``setup`` or ``on_exit`` hook; returns an error text if it raised, else None."""
        hook = getattr(self, which)
        if hook is None:
            return None
        try:
            await invoke(hook, self)
        except Exception as exc:
            logger.warning("%s hook of tool %s raised", which, self.name, exc_info=True)
            return f"the tool's {which} step failed: {type(exc).__name__}: {exc}"
        return None

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """Call the underlying function directly, as if it were not wrapped."""
        if self._chain is not None:
            if args:
                raise TypeError(f"chained tool `{self.name}` takes keyword arguments only")
            return run_sync(lambda: self._chain.run(kwargs)).value  # type: ignore[union-attr]
        return self.func(*args, **kwargs)  # type: ignore[operator]

    def __repr__(self) -> str:
        flags = " requires_approval" if self.requires_approval is not False else ""
        return f"Tool({self.name!r}{flags})"


def _model_name(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_\-]+", name) if part) + "Args"


def _check_name(name: str, func: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolError(
            f"tool name {name!r} (from {func!r}) is not usable: 1-64 letters, digits, '_' or '-'; "
            "pass name=..."
        )
    return name


def as_tool(value: object) -> Tool:
    """A :class:`Tool` as is, or a plain function wrapped in one."""
    if isinstance(value, Tool):
        return value
    if callable(value):
        return Tool(value)
    raise ToolError(f"expected a sigform Tool or a function, got {type(value).__name__}: {value!r}")
