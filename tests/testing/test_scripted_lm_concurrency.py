"""Review findings in sigform/testing: ScriptedLM under concurrent calls."""

from __future__ import annotations

import threading
from typing import Any

from sigform.lm.interface import Completion
from sigform.testing import ScriptedLM


class _Interleaving(ScriptedLM):
    """Runs one other call, on another thread, while the first call builds its first completion:
    the interleaving a batch of threads can produce, made exact."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.other: list[Completion] = []
        self._fired = False

    def _completion(self, item: Any) -> Completion:
        if not self._fired:
            self._fired = True
            worker = threading.Thread(target=lambda: self.other.extend(self([], n=2)))
            worker.start()
            worker.join()
        return super()._completion(item)


def test_a_call_with_n_gets_consecutive_script_items_under_concurrency() -> None:
    lm = _Interleaving(["a1", "a2", "b1", "b2"])
    mine = lm([], n=2)
    texts = sorted([[c.text for c in mine], [c.text for c in lm.other]])
    assert texts == [["a1", "a2"], ["b1", "b2"]]


def test_a_callable_first_item_still_answers_all_n() -> None:
    lm = ScriptedLM([lambda messages, kwargs: ["x", "y", "z"], "after"])
    assert [c.text for c in lm([], n=3)] == ["x", "y", "z"]
    assert [c.text for c in lm([])] == ["after"]


def test_a_later_callable_item_may_not_answer_for_the_whole_call() -> None:
    import pytest

    from sigform.testing.scripted import ScriptError

    lm = ScriptedLM(["a", lambda messages, kwargs: ["x", "y"]])
    with pytest.raises(ScriptError, match="must answer all n"):
        lm([], n=2)
