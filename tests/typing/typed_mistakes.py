"""Eight mistakes a user makes in a typed program (tests/test_typing.py, issue 25).

Each line marked ``# mistake: <name>`` must get an error from mypy --strict and from basedpyright;
no other line may get one. The line marked ``# unseen: <name>`` is a mistake no type checker can
see (it is caught when the program is built), and must get no error.
"""

from __future__ import annotations

from typing import Literal

import sigform as sf
from sigform.lm import LMOptions


class Classify(sf.Signature):
    """Classify a support message."""

    message: str = sf.InputField()
    channel: Literal["email", "chat"] = sf.InputField()
    urgent: bool = sf.OutputField()
    total: int = sf.OutputField(ge=0)


def mistakes(lm: sf.LM) -> None:
    classify = sf.Predict(Classify, lm=lm)
    pred = classify(message="Refund please", channel="email")
    classify(mesage="Refund please", channel="email")  # mistake: misspelled-input
    print(pred.totl)  # mistake: misspelled-output
    print(pred.total.upper())  # mistake: wrong-method-on-typed-output
    classify(message=42, channel="email")  # mistake: wrong-type-to-typed-input
    sf.LM("openai/gpt-4o-mini", options=LMOptions(num_retires=2))  # mistake: misspelled-lm-option
    sf.Predict(Classify, adapter=sf.ChatAdapter(max_reask=2))  # mistake: unknown-adapter-argument
    incomplete = {"message": "Hi", "channel": "chat", "urgent": False}
    sf.Predict(Classify, demos=[incomplete])  # unseen: demo-missing-output
    classify(message="Refund please", channel="fax")  # mistake: literal-not-an-option


def correct(lm: sf.LM) -> int:
    classify = sf.Predict(Classify, lm=lm)
    pred = classify(message="Refund please", channel="email")
    again = classify(Classify(message="Refund please", channel="chat"), lm=lm, config={"temperature": 0})
    urgent: bool = pred.urgent or again.urgent
    return pred.total + int(urgent)
