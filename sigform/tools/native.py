"""The tools side of native function calling (``list[Tool]`` inputs, ``ToolCalls`` outputs).

A signature may take tools as an input and give tool calls as an output::

    class Pick(sf.Signature):
        question: str = sf.InputField()
        tools: list[sf.Tool] = sf.InputField()
        calls: sf.ToolCalls = sf.OutputField()

Every adapter handles this itself (:mod:`sigform.adapters.native_tools`): with an LM that
supports tools, the tools go in the request's ``tools`` and the completion's native calls become
the ``ToolCalls`` output; otherwise the tools are written in the prompt
(``Tool.__sigform_render__``) and ``ToolCalls`` is parsed from text like any other output. The
adapters recognise a :class:`Tool` by its ``__sigform_tool__`` marker, since they cannot import
this package. The helpers below give the same request tools and calls for code outside an adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sigform.lm.interface import Completion
from sigform.tools.tool import Tool

__all__ = ["calls_from_completion", "request_tools", "tool_call_fields", "tools_in_inputs"]


def tools_in_inputs(signature: Any, inputs: Mapping[str, object]) -> list[Tool]:
    """Every :class:`Tool` given in the inputs (a ``Tool`` field or a list of them), in field order."""
    found: list[Tool] = []
    for name in signature.input_fields:
        value = inputs.get(name)
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend(item for item in items if isinstance(item, Tool))
    return found


def tool_call_fields(signature: Any) -> list[str]:
    """Names of the output fields typed :class:`sigform.types.ToolCalls`."""
    from sigform.adapters.native_tools import tool_call_outputs

    return list(tool_call_outputs(signature))


def request_tools(signature: Any, inputs: Mapping[str, object]) -> list[dict[str, Any]]:
    """The request's ``tools`` (OpenAI shape; litellm translates) when the signature asks for tool
    calls and the inputs hold tools; empty otherwise (the same list the adapters send)."""
    from sigform.adapters.native_tools import request_tools as adapter_request_tools

    if not tool_call_fields(signature):
        return []
    return adapter_request_tools(signature, inputs)


def calls_from_completion(signature: object, completion: Completion) -> dict[str, Any]:
    """The ``ToolCalls`` output value(s) from a completion's native tool calls (ids kept).

    Raises :class:`~sigform.errors.FieldValueError` when the provider sent invalid argument JSON.
    """
    from sigform.types import ToolCalls

    fields = tool_call_fields(signature)
    if not fields:
        return {}
    calls = ToolCalls.from_completion_calls(completion.tool_calls)
    return dict.fromkeys(fields, calls)
