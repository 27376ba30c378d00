"""Demo messages are rendered once and reused, never served stale (issue 18 item 2).

Every check compares the caching adapter with one whose fast paths are off (it renders
everything on every call): after any change to a demo value, the templates or the signature, the
two must give the same messages.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.adapters import messages as messages_module
from sigform.adapters.demo_cache import demos_fingerprint
from sigform.adapters.templating import TemplateSet
from sigform.testing import ScriptedLM

ADAPTERS = (sf.ChatAdapter, sf.JSONAdapter, sf.XMLAdapter)


class Point(BaseModel):
    x: int
    tags: list[str]


class QA(sf.Signature):
    """Answer the question."""

    question: str = sf.InputField()
    answer: str = sf.OutputField()


class Located(sf.Signature):
    """Locate the thing."""

    question: str = sf.InputField()
    hints: list[str] = sf.InputField()
    point: Point = sf.OutputField()
    score: Any = sf.OutputField()


def _reference(adapter: sf.Adapter) -> sf.Adapter:
    slow = type(adapter)()
    slow._fast_paths = False
    slow.templates = adapter.templates
    return slow


def _same(
    adapter: sf.Adapter, signature: Any, demos: list[Any], inputs: dict[str, Any]
) -> list[dict[str, Any]]:
    got = adapter.format(signature, demos, inputs)
    assert got == _reference(adapter).format(signature, demos, inputs)
    return got


def _count_renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = messages_module.render_demos

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr("sigform.adapters.formatting.render_demos", counting)
    return calls


@pytest.mark.parametrize("cls", ADAPTERS)
def test_demos_are_rendered_once_for_repeated_calls(
    cls: type[sf.Adapter], monkeypatch: pytest.MonkeyPatch
) -> None:
    renders = _count_renders(monkeypatch)
    adapter = cls()
    demos = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    first = adapter.format(QA, demos, {"question": "one"})
    second = adapter.format(QA, demos, {"question": "two"})
    assert renders[0] == 1
    assert first[:-1] == second[:-1] and first[-1] != second[-1]
    assert len(first) == 1 + 2 * len(demos) + 1
    assert adapter.format_with_layout(QA, demos, {"question": "x"})[1].prefix == 7


@pytest.mark.parametrize("cls", ADAPTERS)
def test_a_demo_changed_in_place_is_rendered_again(cls: type[sf.Adapter]) -> None:
    adapter = cls()
    demo: dict[str, Any] = {
        "question": "Where?",
        "hints": ["north"],
        "point": Point(x=1, tags=["a"]),
        "score": 1,
    }
    demos = [demo]
    inputs = {"question": "now", "hints": []}
    before = _same(adapter, Located, demos, inputs)
    demo["hints"].append("south")  # a nested list, changed in place
    with_south = _same(adapter, Located, demos, inputs)
    assert with_south != before and "south" in str(with_south)
    demo["point"].tags.append("b")  # a model's list field, changed in place
    with_b = _same(adapter, Located, demos, inputs)
    assert with_b != with_south
    demo["point"].x = 2  # a model field set
    assert _same(adapter, Located, demos, inputs) != with_b
    for score in (True, 1.0, -0.0, 0.0, None, "1"):  # equal under == but rendered differently
        demo["score"] = score
        _same(adapter, Located, demos, inputs)
    demo["question"] = "Elsewhere?"
    assert "Elsewhere?" in str(_same(adapter, Located, demos, inputs))


def test_equal_but_differently_rendered_values_have_different_fingerprints() -> None:
    values: list[Any] = [1, 1.0, True, 0.0, -0.0, "1", [1], (1,)]
    prints = {demos_fingerprint([{"v": v}]) for v in values}
    assert len(prints) == len(values)
    utc = datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone.utc)
    plus_one = utc.astimezone(datetime.timezone(datetime.timedelta(hours=1)))
    assert utc == plus_one
    assert demos_fingerprint([{"v": utc}]) != demos_fingerprint([{"v": plus_one}])


def test_values_the_fingerprint_cannot_vouch_for_are_rendered_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Counter:
        """Renders differently every time it is shown: never cacheable."""

        def __init__(self) -> None:
            self.n = 0

        def __str__(self) -> str:
            self.n += 1
            return f"seen {self.n}"

    assert demos_fingerprint([{"answer": Counter()}]) is None
    renders = _count_renders(monkeypatch)
    adapter = sf.ChatAdapter()
    demos = [{"question": "q", "answer": Counter()}]
    a = adapter.format(QA, demos, {"question": "x"})
    b = adapter.format(QA, demos, {"question": "x"})
    assert renders[0] == 2 and a != b


@pytest.mark.parametrize("cls", ADAPTERS)
def test_new_templates_replace_everything_rendered_with_the_old(cls: type[sf.Adapter]) -> None:
    adapter = cls()
    demos = [{"question": "q", "answer": "a"}]
    before = adapter.format(QA, demos, {"question": "x"})
    plain = adapter.format(QA, None, {"question": "x"})
    folder = adapter.templates.folder
    adapter.templates = TemplateSet(
        folder, {"system": "SYSTEM {{ instructions }}", "user": "USER {% include 'inputs.jinja' %}"}
    )
    after = _same(adapter, QA, demos, {"question": "x"})
    assert after != before and after[0]["content"] == "SYSTEM Answer the question."
    assert after[1]["content"].startswith("USER")
    assert adapter.format(QA, None, {"question": "x"}) != plain  # the system message too


@pytest.mark.parametrize("cls", ADAPTERS)
def test_another_signature_with_the_same_fields_is_not_served_the_first_ones_demos(
    cls: type[sf.Adapter],
) -> None:
    adapter = cls()
    demos = [{"question": "q", "answer": "a"}]
    base = _same(adapter, QA, demos, {"question": "x"})
    hinted = QA.with_instructions("Answer tersely.")
    assert _same(adapter, hinted, demos, {"question": "x"})[0] != base[0]
    typed = sf.make_signature("question -> answer: int")
    assert _same(adapter, typed, [{"question": "q", "answer": 3}], {"question": "x"}) != base


def test_returned_messages_are_fresh_dicts() -> None:
    adapter = sf.ChatAdapter()
    demos = [{"question": "q", "answer": "a"}]
    first = adapter.format(QA, demos, {"question": "x"})
    first[1]["content"] = "tampered"
    first[1]["cache_control"] = {"type": "ephemeral"}
    second = adapter.format(QA, demos, {"question": "x"})
    assert second[1] == {
        "role": "user",
        "content": _reference(adapter).format(QA, demos, {"question": "x"})[1]["content"],
    }


def test_bad_demos_are_still_reported_on_every_call() -> None:
    adapter = sf.ChatAdapter()
    for _ in range(2):
        with pytest.raises(sf.InputError, match="demo #1 has no output field"):
            adapter.format(QA, [{"question": "q"}], {"question": "x"})


def test_a_program_whose_demo_changes_sends_the_new_demo() -> None:
    lm = ScriptedLM(["[[ ## answer ## ]]\none", "[[ ## answer ## ]]\ntwo"])
    program = sf.Predict(QA, lm=lm, demos=[{"question": "q", "answer": "old answer"}])
    program(question="x")
    program.demos[0]["answer"] = "new answer"
    program(question="x")
    sent = [call.messages for call in lm.calls]
    assert "old answer" in str(sent[0]) and "new answer" in str(sent[1]) and "old answer" not in str(sent[1])


def test_a_user_subclass_that_renders_from_its_own_state_is_never_served_stale() -> None:
    class Shouting(sf.ChatAdapter):
        def __init__(self) -> None:
            super().__init__()
            self.loud = False

        def render_output(self, value: Any, view: Any) -> str:
            text = super().render_output(value, view)
            return text.upper() if self.loud else text

    adapter = Shouting()
    demos = [{"question": "q", "answer": "quiet"}]
    assert "quiet" in adapter.format(QA, demos, {"question": "x"})[2]["content"]
    adapter.loud = True
    assert "QUIET" in adapter.format(QA, demos, {"question": "x"})[2]["content"]
