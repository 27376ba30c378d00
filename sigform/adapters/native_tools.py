"""Native function calling in every adapter: tool inputs into the request, tool calls into outputs.

A signature can take tools and give the calls a model decided to make::

    class Pick(sf.Signature):
        question: str = sf.InputField()
        tools: list[sf.Tool] = sf.InputField()
        calls: sf.ToolCalls = sf.OutputField()
        note: Optional[str] = sf.OutputField()

**Native path** -- taken when the signature has a ``ToolCalls`` output, the LM
``supports("tools")``, the adapter's ``native_tools`` option is on (the default) and there is at
least one tool (in the tool inputs, or a ``tools=[...]`` request option, which is appended). The
tools go in the request's ``tools``; the tool inputs and the ``ToolCalls`` outputs leave the prompt
text (the prompt is written for a :class:`TextSignature`: the other fields); the completion's
native tool calls become every ``ToolCalls`` output (ids kept) and the other outputs are parsed
from the text as usual. No value is ever made up:

* a reply without tool calls gives an empty ``ToolCalls`` (the model chose to call nothing);
* a reply with tool calls that leaves text outputs out (no text at all, or a preamble such as
  "Let me look that up") gives ``None`` for those that are ``Optional``; any other absent text
  output is a :class:`~sigform.errors.StructureError` naming it;
* tool-call arguments that are not a JSON object are a :class:`~sigform.errors.FieldValueError`
  (asked again like any invalid value).

**Text path** -- otherwise: the tools stay in the prompt, written by their render hook (name,
description, JSON schema of the arguments), and ``ToolCalls`` is parsed from the answer text by
the value engine like any other output.

Dependency direction: ``sigform.tools`` builds on the adapters, so nothing here imports it. A tool
is recognised by duck typing: its class has ``__sigform_tool__ = True`` and a ``to_openai()``
method giving the OpenAI function-calling spec (litellm translates it for other providers).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sigform.adapters.fields import SigCache
from sigform.errors import FieldError, InputError, StructureError
from sigform.lm.interface import Completion
from sigform.types.inspection import args_of, origin_of, split_optional, strip_annotated

if TYPE_CHECKING:
    from sigform.adapters.call_plan import AdapterCall
    from sigform.signatures import Signature

__all__ = [
    "TextSignature",
    "calls_text",
    "is_tool",
    "is_tool_annotation",
    "native_signature",
    "outputs_with_calls",
    "request_tools",
    "tool_call_outputs",
    "tool_inputs",
]

_SEQUENCES = (list, tuple, Sequence)


def is_tool(value: object) -> bool:
    """Whether ``value`` is a tool (its class declares ``__sigform_tool__ = True``)."""
    return getattr(type(value), "__sigform_tool__", False) is True


def _base(annotation: object) -> object:
    base, _ = strip_annotated(annotation)
    base, _ = split_optional(base)
    return strip_annotated(base)[0]


def _is_tool_class(tp: object) -> bool:
    return isinstance(tp, type) and getattr(tp, "__sigform_tool__", False) is True


def is_tool_annotation(annotation: object) -> bool:
    """``Tool``, ``list[Tool]``, ``Sequence[Tool]``, ``tuple[Tool, ...]`` (``Optional`` allowed)."""
    base = _base(annotation)
    if _is_tool_class(base):
        return True
    if origin_of(base) in _SEQUENCES:
        args = [a for a in args_of(base) if a is not Ellipsis]
        return len(args) == 1 and _is_tool_class(_base(args[0]))
    return False


def _is_calls_annotation(annotation: object) -> bool:
    # an annotation naming ToolCalls needs its module loaded: until then none can (exact, and it
    # keeps signatures without tools from building the ToolCalls model)
    if "sigform.types.tool_calls" not in sys.modules:
        return False
    from sigform.types import ToolCalls

    return _base(annotation) is ToolCalls


class TextSignature:
    """The part of a signature written in the prompt text when tools go natively: the original
    signature without its tool inputs and ``ToolCalls`` outputs. It has what adapters read from a
    signature (fields, instructions, name), keeps the original instructions, and ``original`` /
    ``call_outputs`` say how the full outputs are put back together."""

    def __init__(self, original: Any, drop_inputs: Sequence[str], call_outputs: Sequence[str]) -> None:
        self.original = original
        self.call_outputs = tuple(call_outputs)
        self.tool_inputs = tuple(drop_inputs)
        self.__name__ = getattr(original, "__name__", "Signature")
        self.input_fields = MappingProxyType(
            {k: v for k, v in original.input_fields.items() if k not in self.tool_inputs}
        )
        self.output_fields = MappingProxyType(
            {k: v for k, v in original.output_fields.items() if k not in self.call_outputs}
        )
        self.fields = MappingProxyType({**self.input_fields, **self.output_fields})
        self.instructions: str = original.instructions
        self.signature: str = original.signature
        self._key = (original, self.tool_inputs, self.call_outputs, tuple(self.output_fields))

    def only(self, names: Sequence[str]) -> TextSignature:
        """The same view with only the text outputs ``names`` (for a reply that left some out)."""
        keep = set(names)
        narrowed = TextSignature(self.original, self.tool_inputs, self.call_outputs)
        narrowed.output_fields = MappingProxyType({k: v for k, v in self.output_fields.items() if k in keep})
        narrowed.fields = MappingProxyType({**narrowed.input_fields, **narrowed.output_fields})
        narrowed._key = (*self._key[:3], tuple(narrowed.output_fields))
        return narrowed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSignature) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"TextSignature({self.signature!r}, tools natively)"


class _Fields:
    __slots__ = ("call_outputs", "text", "tool_inputs")

    def __init__(self, signature: type[Signature]) -> None:
        self.tool_inputs = tuple(
            n for n, s in signature.input_fields.items() if is_tool_annotation(s.annotation)
        )
        self.call_outputs = tuple(
            n for n, s in signature.output_fields.items() if _is_calls_annotation(s.annotation)
        )
        self.text = (
            TextSignature(signature, self.tool_inputs, self.call_outputs) if self.call_outputs else None
        )


_FIELDS: SigCache[_Fields] = SigCache()


def _fields(signature: type[Signature]) -> _Fields:
    hit = _FIELDS.get(signature)
    if hit is None:
        hit = _FIELDS.put(signature, _Fields(signature))
    return hit


def tool_inputs(signature: type[Signature]) -> tuple[str, ...]:
    """Names of the input fields typed with tools (``Tool`` or a list of them)."""
    return _fields(signature).tool_inputs


def tool_call_outputs(signature: type[Signature]) -> tuple[str, ...]:
    """Names of the output fields typed :class:`~sigform.types.ToolCalls`."""
    return _fields(signature).call_outputs


def request_tools(
    signature: type[Signature], inputs: Mapping[str, object], extra: Any = None
) -> list[dict[str, Any]]:
    """The request's ``tools``: every tool in the tool inputs (in field order), then ``extra``
    (a caller's own ``tools=[...]`` option, tool objects or OpenAI-shaped dicts). A name given
    twice is an :class:`~sigform.errors.InputError`: the model could not tell the two apart."""
    specs: list[dict[str, object]] = []
    for name in tool_inputs(signature):
        value = inputs.get(name)
        items: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
        specs.extend(item.to_openai() for item in items if is_tool(item))
    for item in extra or ():
        specs.append(item.to_openai() if is_tool(item) else dict(item))
    seen: set[str] = set()
    for spec in specs:
        function = spec.get("function")
        fn = function if isinstance(function, Mapping) else spec
        tool_name = str(fn.get("name", ""))
        if tool_name in seen:
            raise InputError(f"two tools are named {tool_name!r}; tool names must be unique in one request")
        seen.add(tool_name)
    return specs


def native_signature(call: AdapterCall) -> TextSignature | None:
    """The :class:`TextSignature` to write the prompt for when the call goes natively, else ``None``."""
    found = _fields(call.signature)
    if found.text is None or not call.lm.supports("tools"):
        return None
    if call.lm_kwargs.get("tools"):
        return found.text
    for name in found.tool_inputs:
        value = call.inputs.get(name)
        items: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
        if any(is_tool(item) for item in items):
            return found.text
    return None


def outputs_with_calls(
    adapter: Any, signature: TextSignature, completion: Completion, inputs: Mapping[str, object] | None = None
) -> dict[str, Any]:
    """Every output of ``signature.original`` from a native completion (rules in the module
    docstring). ``inputs`` as for ``adapter.parse``: a repeated input never counts as an output."""
    from sigform.adapters.echo import mask_echoes
    from sigform.adapters.fields import field_views
    from sigform.types import ToolCalls

    calls = ToolCalls.from_completion_calls(completion.tool_calls)
    views = field_views(signature)[1]
    text = completion.text or ""
    values: dict[str, object] = {}
    if views and completion.tool_calls:
        echo = mask_echoes(text, inputs) if inputs else None
        # an output seen only inside a repeated input was left out, like one not written at all
        found = adapter.extract(signature, echo.masked if echo else text) if text.strip() else None
        present = [v.name for v in views if found is not None and _seen(found, v.name)]
        absent = [v for v in views if v.name not in present]
        required = [v for v in absent if not v.nullable]
        if required:
            raise StructureError(
                "the model answered with tool calls and left out output(s) that are not Optional",
                errors=[
                    FieldError(v.name, v.type_name, "(nothing)", "left out of an answer made of tool calls")
                    for v in required
                ],
                raw=text,
            )
        if present:
            sub = signature if not absent else signature.only(present)
            values = adapter.parse(sub, text, inputs=inputs)
        values.update(dict.fromkeys((v.name for v in absent), None))
    elif views:
        values = adapter.parse(signature, text, inputs=inputs)
    for name in signature.call_outputs:
        values[name] = calls
    return {name: values[name] for name in signature.original.output_fields}


def _seen(found: Any, name: str) -> bool:
    return name in found.values or name in found.conflicts or name in found.problems


def calls_text(completion: Completion) -> str:
    """A completion's native tool calls written as text, for a reask's copy of the answer."""
    calls = [
        {"name": c.name, "args": c.arguments if isinstance(c.arguments, Mapping) else str(c.arguments)}
        for c in completion.tool_calls
    ]
    return json.dumps({"tool_calls": calls}, ensure_ascii=False, default=str)
