"""Message assembly shared by every adapter: system, demos, history turns, the final request.

Adapters supply the wording (templates) and the rendering of one message's fields; this module
owns the order and the rules: demos keep the order given, a demo needs at least one input and
one output (otherwise it is an error, never silently dropped), an incomplete demo is marked in
a note instead of placeholder values, a ``History`` input becomes prior turns after the demos,
and media values become real content parts. Media parts are placed through private sentinel
tokens that user text cannot contain (NUL characters are stripped from every rendered value),
so no text can ever create a content part.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import regex

from sigform.adapters.fields import FieldView, field_views
from sigform.conversation.layout import Layout
from sigform.errors import InputError
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.adapters.formatting import PromptWriter
    from sigform.signatures import Signature

__all__ = ["MediaCollector", "assemble", "assemble_with_layout", "demo_to_dict", "render_demos"]

_TOKEN = "\x00sigform-media:{}\x00"
_TOKEN_RE = regex.compile("\x00sigform-media:(\\d+)\x00")



_MEDIA_MODULE = "sigform.types.media"


def _media_in(value: object) -> list[object]:
    """The media values in ``value`` (itself, or nested in a structure)."""
    # No Media instance can exist before its module is loaded: checking sys.modules is exact and
    # keeps plain-text programs from importing (and building) the media models at all.
    if _MEDIA_MODULE not in sys.modules:
        return []
    from sigform.types.media import iter_media

    return list(iter_media(value))


def _is_media(value: object) -> bool:
    from sigform.types.media import Media

    return isinstance(value, Media)


class MediaCollector:
    """Collects the content parts of one message while its text is rendered."""

    def __init__(self) -> None:
        self.parts: list[list[dict[str, Any]]] = []

    def value_text(self, value: Any, view: FieldView, render: Callable[[Any, FieldView], str]) -> str:
        """Text for one field value; media become sentinel tokens replaced by parts later."""
        media = [] if isinstance(value, (str, int, float, bool)) else _media_in(value)
        if media and (_is_media(value) or all(_is_media(v) for v in value)):
            return "\n".join(self._token(m) for m in media)
        text = render(value, view).replace("\x00", "")
        if media:  # media nested in a structure: the text describes them, the parts follow it
            text += "\n" + "\n".join(self._token(m) for m in media)
        return text

    def _token(self, media: Any) -> str:
        self.parts.append(list(media.to_content_parts()))
        return _TOKEN.format(len(self.parts) - 1)

    def content(self, text: str) -> str | list[dict[str, Any]]:
        """The message content: plain text, or text and media content parts in order."""
        if not self.parts:
            return text
        out: list[dict[str, Any]] = []
        pos = 0
        for match in _TOKEN_RE.finditer(text):
            chunk = text[pos : match.start()].strip("\n")
            if chunk.strip():
                out.append({"type": "text", "text": chunk})
            out.extend(self.parts[int(match.group(1))])
            pos = match.end()
        tail = text[pos:].strip("\n")
        if tail.strip():
            out.append({"type": "text", "text": tail})
        return out


def demo_to_dict(demo: object, index: int) -> dict[str, Any]:
    """A demo as a plain dict: any Mapping, or an object with ``to_dict()`` (programs' Example)."""
    if isinstance(demo, Mapping):
        return dict(demo)
    to_dict = getattr(demo, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, Mapping):
            return dict(data)
    raise InputError(
        f"demo #{index + 1} is a {type(demo).__name__}; expected a dict (or Mapping) of field values "
        "or an object with .to_dict()"
    )


def _history_turns(
    adapter: PromptWriter,
    signature: type[Signature],
    view: FieldView,
    value: Any,
    inputs: Sequence[FieldView],
    outputs: Sequence[FieldView],
) -> list[list[Message]]:
    """The history's messages, grouped into the units a pruner keeps or drops together."""
    if value is None:
        return []
    if getattr(value, "is_raw_turns", False):  # chat turns given as they are (tool calls included)
        entries = value.entries
        return [[cast(Message, dict(entries[i])) for i in unit] for unit in value.groups()]
    turns = getattr(value, "entries", value)
    if not isinstance(turns, Sequence) or isinstance(turns, (str, bytes)):
        raise InputError(
            f"input `{view.name}` must be a History (a list of turns); got {type(value).__name__}"
        )
    out: list[list[Message]] = []
    for i, turn in enumerate(turns):
        data = demo_to_dict(turn, i)
        ins = [v for v in inputs if v.name in data]
        outs = [v for v in outputs if v.name in data]
        if not ins and not outs:
            raise InputError(
                f"history `{view.name}` turn #{i + 1} has none of the signature's fields "
                f"({', '.join(v.name for v in (*inputs, *outputs))}); keys: {sorted(data)}"
            )
        unit: list[Message] = []
        if ins:
            unit.append(adapter.user_message(signature, ins, data, main=False))
        if outs:
            unit.append(
                {"role": "assistant", "content": adapter.assistant_text(signature, outs, data, complete=True)}
            )
        out.append(unit)
    return out


def assemble(
    adapter: PromptWriter,
    signature: type[Signature],
    demos: Sequence[object] | None,
    inputs: Mapping[str, object],
) -> list[Message]:
    """All messages of one request, in order: system, demos, history turns, the request."""
    return assemble_with_layout(adapter, signature, demos, inputs)[0]


def assemble_with_layout(
    adapter: PromptWriter,
    signature: type[Signature],
    demos: Sequence[object] | None,
    inputs: Mapping[str, object],
) -> tuple[list[Message], Layout]:
    """:func:`assemble`, and the request's :class:`~sigform.conversation.Layout`: system and
    demos are the stable prefix, each History entry (a tool call with its results) one prunable
    unit, the request itself last."""
    in_views, out_views = field_views(signature)
    history = [v for v in in_views if v.kind == "history"]
    plain = [v for v in in_views if v.kind != "history"] if history else list(in_views)
    messages: list[Message] = [{"role": "system", "content": adapter.system_message(signature)}]
    if demos:
        messages.extend(adapter.demo_messages(signature, demos))
    absent = [v.name for v in in_views if v.name not in inputs]
    if absent:
        raise InputError(
            f"missing input field(s) {', '.join(f'`{n}`' for n in absent)} for signature "
            f"{signature.signature!r}; got {sorted(inputs)}"
        )
    prefix = len(messages)
    units: list[tuple[int, ...]] = []
    for view in history:
        for unit in _history_turns(adapter, signature, view, inputs[view.name], plain, out_views):
            units.append(tuple(range(len(messages), len(messages) + len(unit))))
            messages.extend(unit)
    messages.append(adapter.user_message(signature, plain, inputs, main=True))
    return messages, Layout(prefix, tuple(units))


def render_demos(
    adapter: PromptWriter, signature: type[Signature], demos: Sequence[Mapping[str, object]]
) -> list[Message]:
    """The user/assistant message pairs of ``demos`` (dicts of field values), in order; a demo
    without an input or an output is an error, an incomplete one is marked with a note."""
    in_views, out_views = field_views(signature)
    plain = [v for v in in_views if v.kind != "history"]
    messages: list[Message] = []
    for i, data in enumerate(demos):
        ins = [v for v in plain if v.name in data]
        outs = [v for v in out_views if v.name in data]
        if not ins or not outs:
            lacking = "input" if not ins else "output"
            raise InputError(
                f"demo #{i + 1} has no {lacking} field; a demo needs at least one input "
                f"({', '.join(v.name for v in plain) or 'none declared'}) and one output "
                f"({', '.join(v.name for v in out_views)}); its keys: {sorted(data)}"
            )
        missing = [v.name for v in (*plain, *out_views) if v.name not in data]
        messages.append(adapter.user_message(signature, ins, data, main=False, missing=missing))
        messages.append(
            {
                "role": "assistant",
                "content": adapter.assistant_text(signature, outs, data, complete=not missing),
            }
        )
    return messages
