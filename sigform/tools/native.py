"""The tools side of native function calling for adapters (``list[Tool]`` inputs, ``ToolCalls`` outputs).

A signature may take tools as an input and give tool calls as an output::

    class Pick(sf.Signature):
        question: str = sf.InputField()
        tools: list[sf.Tool] = sf.InputField()
        calls: sf.ToolCalls = sf.OutputField()

When the LM supports native tools, an adapter puts :func:`request_tools` into the request's
``tools`` and reads the completion's native calls with :func:`calls_from_completion`; otherwise the
tools are written in the prompt (``Tool.__sigform_render__``) and ``ToolCalls`` is parsed from text
like any other output. Nothing here imports the adapters, so they can call it lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sigform.lm.interface import Completion
from sigform.tools.tool import Tool

__all__ = ["calls_from_completion", "request_tools", "tool_call_fields", "tools_in_inputs"]


def tools_in_inputs(signature: Any, inputs: Mapping[str, Any]) -> list[Tool]:
    """Every :class:`Tool` given in the inputs (a ``Tool`` field or a list of them), in field order."""
    found: list[Tool] = []
    for name in signature.input_fields:
        value = inputs.get(name)
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend(item for item in items if isinstance(item, Tool))
    return found


def tool_call_fields(signature: Any) -> list[str]:
    """Names of the output fields typed :class:`sigform.types.ToolCalls`."""
    from sigform.types import ToolCalls

    return [name for name, spec in signature.output_fields.items() if spec.annotation is ToolCalls]


def request_tools(signature: Any, inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``tools`` (OpenAI shape; litellm translates) when the signature asks for tool
    calls and the inputs hold tools; empty otherwise."""
    if not tool_call_fields(signature):
        return []
    return [tool.to_openai() for tool in tools_in_inputs(signature, inputs)]


def calls_from_completion(signature: Any, completion: Completion) -> dict[str, Any]:
    """The ``ToolCalls`` output value(s) from a completion's native tool calls (ids kept).

    Raises :class:`~sigform.errors.FieldValueError` when the provider sent invalid argument JSON.
    """
    from sigform.types import ToolCalls

    fields = tool_call_fields(signature)
    if not fields:
        return {}
    calls = ToolCalls.from_completion_calls(completion.tool_calls)
    return dict.fromkeys(fields, calls)
