"""Completion mode: a signature, demos and inputs as one plain-text few-shot document.

A base model (no chat template; ``lm.model_type == "text"``, see :mod:`sigform.lm.text_mode`)
continues documents; it was never trained on chat turns. For it every adapter writes the request
as records, the way few-shot prompts are written for pretrained models::

    Extract the invoice details from the text.

    Text: Invoice from Redwood Analytics: $3,150.00 due 2025-09-09.
    JSON: {"vendor": "Redwood Analytics", "total": 3150.0, ...}

    Text: <the new input>
    JSON:

the instructions, each demo as one record (its inputs as ``Label: value`` lines, then its answer
in the adapter's own format: a JSON object, ``[[ ## field ## ]]`` sections, XML elements), the
new inputs, then the cue that starts the answer. The model continues from the cue; the part of
the cue that belongs to the answer (:meth:`~sigform.adapters.formatting.PromptWriter.answer_prefix`:
the first field's marker or opening tag) is put back before the answer is read, so every adapter
reads a completion-mode answer with its usual parser. The next record's first input label is a
stop sequence: the model otherwise goes on inventing records (for an answer written on one line,
a JSON object after demos written so, the line's end is: the model stops a few tokens sooner).

Without demos the document lists the output fields with their descriptions after the
instructions (a base model has nothing else to go by). An input that is media (an image, audio)
cannot be written into a text document: it is an :class:`~sigform.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sigform.adapters.fields import FieldView, field_views
from sigform.adapters.messages import demo_to_dict
from sigform.errors import InputError

if TYPE_CHECKING:
    from sigform.adapters.formatting import PromptWriter
    from sigform.signatures import Signature

__all__ = ["Document", "label", "write_document"]


class Document:
    """One completion-mode request: the ``text`` sent as the prompt, the answer ``prefix`` to
    put back before reading the continuation, the ``stop`` sequences sent to end the answer, and
    ``next_record``, where the next record starts: the answer ends there whatever the server did
    with the stops (the line's end, a stop for one-line answers, is not: a server that did not get
    it may send a whole answer on several lines)."""

    __slots__ = ("next_record", "prefix", "stop", "text")

    def __init__(self, text: str, prefix: str, stop: list[str], next_record: str = "") -> None:
        self.text = text
        self.prefix = prefix
        self.stop = stop
        self.next_record = next_record


def label(view: FieldView) -> str:
    """A field's record label: ``due_date`` -> ``Due date``."""
    words = view.name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _input_lines(writer: PromptWriter, views: Sequence[FieldView], values: Mapping[str, object]) -> str:
    lines = []
    for view in views:
        value = values[view.name]
        if _is_media(value):
            raise InputError(
                f"input `{view.name}` is {type(value).__name__} media; a text-completion model "
                "(model_type='text') reads text only: use a chat model for media inputs"
            )
        lines.append(f"{label(view)}: {writer.render_input(value, view)}")
    return "\n".join(lines)


def _is_media(value: object) -> bool:
    from sigform.types.media import Media

    return isinstance(value, Media)


def write_document(
    writer: PromptWriter,
    signature: type[Signature],
    demos: Sequence[object] | None,
    inputs: Mapping[str, object],
) -> Document:
    """The completion-mode request of ``signature`` (see the module docstring)."""
    in_views, out_views = field_views(signature)
    plain = [v for v in in_views if v.kind != "history"]
    absent = [v.name for v in plain if v.name not in inputs]
    if absent:
        raise InputError(f"missing input field(s) {', '.join(f'`{n}`' for n in absent)}")
    parts = [writer.document_head(signature, out_views, bool(demos))]
    for i, demo in enumerate(demos or ()):
        data = demo_to_dict(demo, i)
        ins = [v for v in plain if v.name in data]
        outs = [v for v in out_views if v.name in data]
        if not ins or not outs:
            continue  # nothing to show as a record
        parts.append(f"{_input_lines(writer, ins, data)}\n{writer.record_answer(signature, outs, data)}")
    records = len(parts) > 1
    prefix = writer.answer_prefix(signature, out_views)
    cue = writer.answer_label
    cue = f"{cue} {prefix}".strip(" ") if cue else prefix
    parts.append(f"{_input_lines(writer, plain, inputs)}\n{cue}")
    next_record = f"\n\n{label(plain[0])}:" if plain else ""
    stop = [next_record] if next_record else []
    if writer.one_line_answer and records:
        stop = ["\n"]  # the records' answers are one line each: the line's end is the answer's
    return Document("\n\n".join(p for p in parts if p), prefix, stop, next_record)
