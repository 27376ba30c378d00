"""The fixed part of a signature's request, worked out once so that a call only fills in values.

A request without demos or History turns is two messages: the system message (cached per
signature) and a user message whose wording around the values is also fixed per signature. The
plan keeps both, with the input fields and their slots; formatting a call renders each value and
joins the pieces. A plain ``str`` value of a ``str`` field is written directly (the common
case); anything else goes through the adapter's full rendering, media included.

The plan gives exactly the messages of the generic path (:mod:`sigform.adapters.messages`,
tested against it); where the request is not of this simple shape -- demos, History inputs, a
tools-only signature, templates or rendering methods overridden by the user -- there is no plan
and the generic path runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sigform.adapters.fields import FieldView, field_views
from sigform.adapters.messages import MediaCollector
from sigform.adapters.native_tools import TextSignature
from sigform.conversation.layout import Layout
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.adapters.formatting import PromptWriter
    from sigform.signatures import Signature

__all__ = ["RequestPlan", "build_request_plan"]

_LAYOUT = Layout(1, ())  # system message as the prefix, no prunable turns


class RequestPlan:
    """System message, input fields and the user message's literal pieces of one signature."""

    __slots__ = ("first", "layout", "slots", "system")

    def __init__(self, system: str, views: tuple[FieldView, ...], pieces: list[str]) -> None:
        self.system = system
        self.first = pieces[0]
        # (field name, its view, whether it is a plain `str` field, the literal after its value)
        self.slots = tuple(
            (v.name, v, v.annotation is str, literal) for v, literal in zip(views, pieces[1:], strict=True)
        )
        self.layout = _LAYOUT

    def messages(self, adapter: PromptWriter, inputs: Mapping[str, object]) -> list[Message] | None:
        """The request's messages for ``inputs``; ``None`` when an input is missing (the generic
        path then raises its error)."""
        out = [self.first]
        media: MediaCollector | None = None
        for name, view, plain, literal in self.slots:
            if name not in inputs:
                return None
            value = inputs[name]
            if plain and type(value) is str:
                out.append(adapter.plain_input(value))
            else:
                if media is None:
                    media = MediaCollector()
                out.append(media.value_text(value, view, adapter.render_input))
            out.append(literal)
        text = "".join(out).strip()
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": text if media is None else media.content(text)},
        ]


def build_request_plan(adapter: PromptWriter, signature: type[Signature]) -> RequestPlan | None:
    """The plan of ``signature``'s requests, or ``None`` when they need the generic path."""
    if adapter.templates.overridden or not adapter.standard_formatting():
        return None
    if isinstance(signature, TextSignature) and not signature.output_fields:
        return None  # tools only: the request line asks for tool calls
    inputs, _ = field_views(signature)
    if any(v.kind == "history" for v in inputs):
        return None
    pieces = adapter._user_pieces(signature, inputs, True, ())
    if pieces is None:
        return None
    return RequestPlan(adapter.system_message(signature), inputs, pieces)
