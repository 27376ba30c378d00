"""A fresh process's call path, loaded ahead of its first call (a :mod:`sigform.warmup` task).

The first ``Predict`` call of a process imports the adapter stack and jinja2, compiles the
answer-reading patterns and the demo template, and builds the default adapter. Doing it on a
throwaway ``question -> answer`` signature with one demo touches the same modules, templates
and pattern caches as a user's program; nothing is sent, no LM is built, and no callback sees
an event.
"""

from __future__ import annotations

__all__ = ["warm_call_path"]

_CHAT_ANSWER = "[[ ## answer ## ]]\nyes\n\n[[ ## completed ## ]]"


def warm_call_path() -> None:
    from sigform.hooks import muted

    with muted():  # the user's callbacks never see this throwaway program
        _format_and_parse()


def _format_and_parse() -> None:
    from sigform.adapters import ChatAdapter
    from sigform.predict.predict import Predict, default_adapter
    from sigform.signatures import make_signature

    signature = make_signature("question -> answer")
    demos = [{"question": "Is it?", "answer": "yes"}]
    inputs = {"question": "Is it?"}
    default_adapter()
    chat = ChatAdapter()  # what the default adapter sends through unless the LM constrains JSON
    chat.format(signature, demos, inputs)
    chat.parse(signature, _CHAT_ANSWER, inputs=inputs)
    Predict(signature)
