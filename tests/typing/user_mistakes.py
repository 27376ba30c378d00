"""Mistakes a type checker must catch in a user's program (tests/test_typing.py): each line
marked ``# E: <code>`` must get exactly that mypy error, and no other line any error."""

from __future__ import annotations

import sigform as sf


class Summarise(sf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.write = sf.Predict("text -> summary")

    def forward(self, text: str) -> sf.Prediction:
        return self.write(text=text)


def mistakes() -> None:
    qa = sf.Predict("question -> answer")
    count: int = qa(question="?")  # E: assignment
    Summarise()(txt="a typo")  # E: call-arg
    Summarise()(text=42)  # E: arg-type
    sf.Predict(42)  # E: call-overload
    sf.Predict("question -> answer", lm="openai/gpt-4o-mini")  # E: call-overload
    sf.Predict("question -> answer", adapter="json")  # E: call-overload
    sf.Agent("question -> answer", tools=[], lm="openai/gpt-4o-mini")  # E: arg-type
    sf.configure(temprature=0)  # E: call-arg
    with sf.context(unknown_inputs="maybe"):  # E: arg-type
        pass
    print(count)
