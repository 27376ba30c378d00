"""Adapters: signatures and inputs into chat messages, LM text back into typed values.

* :class:`AutoAdapter` (default) -- constrained JSON where the LM constrains decoding to a
  schema, :class:`ChatAdapter` sections elsewhere;
* :class:`ChatAdapter` -- ``[[ ## field ## ]]`` sections;
* :class:`JSONAdapter` -- one JSON object, native structured outputs when available;
* :class:`XMLAdapter` -- one element per field, nested elements for lists and models;
* :class:`TwoStepAdapter` -- free-form answer, then typed extraction by a second call.

Every adapter has ``format`` / ``parse`` / ``format_assistant``, ``run`` / ``arun`` (an
:class:`AdapterResult`), ``__call__`` / ``acall`` (the output dicts) and ``stream_parser``.
Inside, one run is one :class:`AdapterCall` (the LM, the signature, demos, inputs and request
options), built once and passed whole through the call loop (``run_call`` / ``arun_call``).

Tools: a signature with ``list[Tool]`` inputs and a ``ToolCalls`` output uses native function
calling when the LM supports it, and tools described in the prompt otherwise (see
:mod:`sigform.adapters.native_tools`; ``native_tools=False`` on any adapter forces the prompt).

Duplicate-field rule, the same in every adapter: a field given more than once is accepted when
every non-empty occurrence carries the same value; different values are a
:class:`~sigform.errors.StructureError`, never a guess. (In chat, text after
``[[ ## completed ## ]]`` is run-on generation and is not read at all; among several JSON
objects in one answer, the object that carries the fields is chosen, the later filled-in one
over an earlier template.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sigform._lazy import lazy_exports

# name -> defining module, loaded on first access (PEP 562): a program using ChatAdapter never
# imports the JSON/XML/two-step adapters or the stream parser
_EXPORTS: dict[str, str] = {
    "Adapter": "sigform.adapters.base",
    "AdapterCall": "sigform.adapters.call_plan",
    "AdapterResult": "sigform.adapters.result",
    "AutoAdapter": "sigform.adapters.auto",
    "ChatAdapter": "sigform.adapters.chat",
    "FieldDelta": "sigform.adapters.streaming",
    "JSONAdapter": "sigform.adapters.json_adapter",
    "StreamParser": "sigform.adapters.streaming",
    "TwoStepAdapter": "sigform.adapters.two_step",
    "XMLAdapter": "sigform.adapters.xml",
}

__all__ = [
    "Adapter",
    "AdapterCall",
    "AdapterResult",
    "AutoAdapter",
    "ChatAdapter",
    "FieldDelta",
    "JSONAdapter",
    "StreamParser",
    "TwoStepAdapter",
    "XMLAdapter",
]


__getattr__, __dir__ = lazy_exports('sigform.adapters', _EXPORTS, globals())


if TYPE_CHECKING:
    from sigform.adapters.auto import AutoAdapter
    from sigform.adapters.base import Adapter
    from sigform.adapters.call_plan import AdapterCall
    from sigform.adapters.chat import ChatAdapter
    from sigform.adapters.json_adapter import JSONAdapter
    from sigform.adapters.result import AdapterResult
    from sigform.adapters.streaming import FieldDelta, StreamParser
    from sigform.adapters.two_step import TwoStepAdapter
    from sigform.adapters.xml import XMLAdapter
