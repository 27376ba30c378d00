"""The call loop's public interface (sigform.adapters.call_loop): adapters plug into it through
their own methods (attempt, send_request, loop), never through another module's private names."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Generator
from pathlib import Path
from typing import Any

import sigform as sf
from sigform.adapters import Adapter, AutoAdapter, ChatAdapter, TwoStepAdapter
from sigform.adapters.call_loop import RunState
from sigform.adapters.call_plan import PlannedCall
from sigform.adapters.json_adapter import forget_step_downs
from sigform.lm.interface import Completion, LMProtocol
from sigform.testing import ScriptedLM

SIG = sf.make_signature("question -> answer: str, n: int")
GOOD = "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\n3\n\n[[ ## completed ## ]]"
BAD_VALUE = "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\nmany\n\n[[ ## completed ## ]]"
ADAPTERS = Path(sf.__file__).parent / "adapters"


def test_no_adapter_imports_private_names_of_the_base_class_or_the_loop() -> None:
    loop_modules = {"sigform.adapters.base", "sigform.adapters.call_loop", "sigform.adapters.call_plan"}
    offenders = []
    for path in sorted(ADAPTERS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in loop_modules:
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert offenders == []


def test_two_step_and_auto_plug_in_without_replacing_the_loop_or_the_drivers() -> None:
    assert "loop" not in vars(TwoStepAdapter) and "attempt" in vars(TwoStepAdapter)
    assert not {"run", "arun"} & set(vars(AutoAdapter)) and "loop" in vars(AutoAdapter)


class _Counting(ChatAdapter):
    """A user's adapter that watches every request through the public send hook."""

    def __init__(self) -> None:
        super().__init__(fallback=False)
        self.seen: list[PlannedCall] = []

    def send_request(
        self, lm: LMProtocol, state: RunState, request: PlannedCall
    ) -> Generator[PlannedCall, Any, list[Completion]]:
        self.seen.append(request)
        return (yield from super().send_request(lm, state, request))


def test_send_request_hook_sees_the_first_request_and_the_reask() -> None:
    adapter = _Counting()
    result = adapter.run(ScriptedLM([BAD_VALUE, GOOD], features={"stop"}), SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}] and result.attempts == 2
    assert len(adapter.seen) == 2
    assert adapter.seen[1].messages[-2] == {"role": "assistant", "content": BAD_VALUE}


def test_loop_is_stepped_the_same_by_run_and_arun() -> None:
    sync = ChatAdapter().run(ScriptedLM([BAD_VALUE, GOOD]), SIG, [], {"question": "q"})
    lm = ScriptedLM([BAD_VALUE, GOOD])
    asynced = asyncio.run(ChatAdapter().arun(lm, SIG, [], {"question": "q"}))
    assert (sync.outputs, sync.attempts, sync.adapter_names) == (
        asynced.outputs,
        asynced.attempts,
        asynced.adapter_names,
    )


def test_auto_adapter_as_extraction_adapter_chooses_json_for_a_constraining_lm() -> None:
    """The two-step extraction runs the extraction adapter's own loop: an AutoAdapter there
    picks constrained JSON for a schema-constraining LM (it used to run chat sections)."""
    forget_step_downs()
    main = ScriptedLM(["Paris, and three of them."])
    extractor = ScriptedLM(['{"answer": "Paris", "n": 3}'], features={"json_schema", "json_object", "stop"})
    adapter = TwoStepAdapter(extraction_lm=extractor, extraction_adapter=AutoAdapter())
    result = adapter.run(main, SIG, [], {"question": "q"})
    assert result.outputs == [{"answer": "Paris", "n": 3}]
    assert result.adapter_names == ["TwoStepAdapter", "JSONAdapter"]
    assert extractor.calls[0].kwargs["response_format"]["type"] == "json_schema"


def test_two_step_ignores_fallback_true_as_before() -> None:
    """A two-step run has no fallback of its own (its extraction adapter has one)."""
    main = ScriptedLM(["Paris, three."])
    extractor = ScriptedLM(['{"answer": "Paris", "n": 3}'])
    adapter = TwoStepAdapter(extraction_lm=extractor, fallback=True)
    assert adapter.fallback_adapter() is None
    assert adapter(main, SIG, [], {"question": "q"}) == [{"answer": "Paris", "n": 3}]


def test_base_adapter_keeps_the_request_name() -> None:
    from sigform.adapters import base

    assert base.PlannedCall is PlannedCall and isinstance(Adapter(), Adapter)


def test_the_adapter_base_class_is_split_by_job() -> None:
    """Writing messages, reading answers and the call loop are three modules of a readable size
    (base.py was 852 lines holding all three)."""
    from sigform.adapters.formatting import PromptWriter

    assert issubclass(Adapter, PromptWriter) and "format" not in vars(Adapter) and "parse" in vars(Adapter)
    for name in ("base", "formatting", "call_loop", "field_values"):
        assert len((ADAPTERS / f"{name}.py").read_text(encoding="utf-8").splitlines()) < 450, name


def test_a_request_identical_to_the_first_as_it_was_sent_is_not_sent_again() -> None:
    state = RunState()
    messages: list[Any] = [{"role": "user", "content": "q"}]
    first = PlannedCall(messages, {"temperature": 0})
    assert state.fresh(first)
    first.kwargs["temperature"] = 1  # changed by its caller after it was sent
    messages.append({"role": "assistant", "content": "a"})
    assert state.fresh(PlannedCall([{"role": "user", "content": "q"}], {"temperature": 1}))
    assert not state.fresh(PlannedCall([{"role": "user", "content": "q"}], {"temperature": 0}))
    assert not state.fresh(PlannedCall([{"role": "user", "content": "q"}], {"temperature": 1}))


def test_a_run_of_one_request_does_not_fingerprint_it(monkeypatch: Any) -> None:
    # the fingerprint (a sorted JSON dump of the whole request) is only needed to compare two
    # requests; most runs send one
    from sigform.adapters import call_loop

    keyed: list[Any] = []
    real = call_loop.request_key
    monkeypatch.setattr(call_loop, "request_key", lambda *a: keyed.append(a) or real(*a))
    assert ChatAdapter().run(ScriptedLM([GOOD], features={"stop"}), SIG, [], {"question": "q"}).outputs
    assert keyed == []
    ChatAdapter().run(ScriptedLM([BAD_VALUE, GOOD], features={"stop"}), SIG, [], {"question": "q"})
    assert len(keyed) == 2  # the first request and its re-ask, once the re-ask is compared
