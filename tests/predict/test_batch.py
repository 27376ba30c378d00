"""batch / abatch: order, failures, max_errors, settings propagation, executors, progress."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

import sigform as sf
from sigform.hooks import Callback, Event
from sigform.predict import BatchError, Example, Failure, Module, Predict
from sigform.predict.progress import BatchProgress, progress_wanted
from sigform.testing import ScriptedLM


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def doubling_lm(fail_on: set[int] = frozenset(), delay: float = 0.0) -> ScriptedLM:  # type: ignore[assignment]
    """Answers ``y = 2x`` for the number in the prompt; fails for numbers in ``fail_on``."""

    def answer(text: str) -> Any:
        x = int(text.split("[[ ## x ## ]]")[1].split()[0])
        if delay:
            time.sleep(delay * ((x * 7) % 5) / 5)  # scrambled finishing order
        if x in fail_on:
            return sf.ProviderError(f"boom {x}")
        return {"text": chat(y=2 * x), "usage": {"prompt_tokens": 10, "completion_tokens": x}}

    return ScriptedLM.by_input(answer)


def program(lm: ScriptedLM | None = None) -> Predict:
    return Predict("x: int -> y: int", lm=lm)


def test_results_in_input_order_with_examples_and_dicts() -> None:
    lm = doubling_lm(delay=0.01)
    items: list[Any] = [{"x": i} if i % 2 else Example(x=i, y=2 * i).with_inputs("x") for i in range(20)]
    results = program(lm).batch(items, num_threads=4, progress=False)
    assert [r.y for r in results] == [2 * i for i in range(20)]
    assert len(lm.calls) == 20


def test_unmarked_example_passes_all_keys() -> None:
    # labels in an unmarked example are inputs too: an unknown-input error, reported per example
    results, failures = program(doubling_lm()).batch(
        [Example(x=1, y=2)], progress=False, return_failures=True
    )
    assert results == [None]
    assert isinstance(failures[0].error, sf.InputError) and "`y`" in str(failures[0].error)


def test_failures_are_collected_and_the_run_continues() -> None:
    lm = doubling_lm(fail_on={3, 7})
    results, failures = program(lm).batch(
        [{"x": i} for i in range(10)], num_threads=3, progress=False, return_failures=True
    )
    assert [r is None for r in results] == [i in {3, 7} for i in range(10)]
    assert [f.index for f in failures] == [3, 7]
    assert all(isinstance(f, Failure) and isinstance(f.error, sf.ProviderError) for f in failures)
    assert failures[0].example.to_dict() == {"x": 3}
    assert "#3: ProviderError: boom 3" in str(failures[0])
    plain = program(doubling_lm(fail_on={1})).batch([{"x": 0}, {"x": 1}], progress=False)
    assert plain[0].y == 0 and plain[1] is None


def test_failures_are_logged_not_printed(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sigform.predict"):
        program(doubling_lm(fail_on={0})).batch([{"x": 0}], progress=False)
    assert any("boom 0" in r.getMessage() for r in caplog.records)
    out = capsys.readouterr()
    assert "boom" not in out.out and "boom" not in out.err


def test_max_errors_stops_the_run() -> None:
    lm = doubling_lm(fail_on=set(range(100)))
    with pytest.raises(BatchError, match=r"max_errors=2") as info:
        program(lm).batch([{"x": i} for i in range(100)], num_threads=1, max_errors=2, progress=False)
    assert len(info.value.failures) == 3
    assert len(lm.calls) == 3  # no example started after the third failure
    assert len(info.value.results) == 100


def test_max_errors_setting_and_zero() -> None:
    with sf.context(max_errors=0), pytest.raises(BatchError):
        program(doubling_lm(fail_on={0})).batch([{"x": 0}, {"x": 1}], num_threads=1, progress=False)


class Seen(Callback):
    def __init__(self) -> None:
        self.threads: set[str] = set()

    def on_module_start(self, event: Event) -> None:
        self.threads.add(threading.current_thread().name)


def test_settings_and_callbacks_propagate_into_workers() -> None:
    seen = Seen()
    with sf.context(lm=doubling_lm(), callbacks=[seen]):
        results = program().batch([{"x": i} for i in range(6)], num_threads=3, progress=False)
    assert [r.y for r in results] == [0, 2, 4, 6, 8, 10]
    assert seen.threads and all(name.startswith("sigform-batch") for name in seen.threads)


def test_a_user_thread_pool_gets_context_propagation() -> None:
    with ThreadPoolExecutor(2) as pool, sf.context(lm=doubling_lm()):
        results = program().batch([{"x": 1}, {"x": 2}], executor=pool, progress=False)
    assert [r.y for r in results] == [2, 4]


class InlineExecutor:
    """A user-supplied executor: runs each task at once, in the caller (like a remote engine)."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        self.submitted += 1
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_executor_is_pluggable() -> None:
    ex = InlineExecutor()
    results = program(doubling_lm()).batch([{"x": 4}, {"x": 5}], executor=ex, progress=False)
    assert [r.y for r in results] == [8, 10] and ex.submitted == 2
    with pytest.raises(TypeError, match="submit"):
        program().batch([{"x": 1}], executor=object(), progress=False)  # type: ignore[arg-type]


def test_batch_of_a_module() -> None:
    class Twice(Module):
        def __init__(self) -> None:
            self.step = Predict("x: int -> y: int")

        def forward(self, x: int) -> Any:
            return self.step(x=self.step(x=x).y)

    with sf.context(lm=doubling_lm()):
        results = Twice().batch([{"x": 1}, {"x": 3}], progress=False)
    assert [r.y for r in results] == [4, 12]


def test_bad_inputs_to_batch() -> None:
    with pytest.raises(TypeError, match="not a single one"):
        program().batch({"x": 1}, progress=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="#1 is a int"):
        program().batch([{"x": 1}, 5], progress=False)
    assert program().batch([], progress=False) == []


def test_abatch_order_failures_and_concurrency() -> None:
    in_flight = 0
    peak = 0

    async def answer(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        x = int(messages[-1]["content"].split("[[ ## x ## ]]")[1].split()[0])
        await asyncio.sleep(0.001 * (x % 3))
        in_flight -= 1
        return sf.ProviderError("nope") if x == 4 else chat(y=2 * x)

    prog = program(ScriptedLM(answer))
    results, failures = asyncio.run(
        prog.abatch([{"x": i} for i in range(12)], concurrency=3, progress=False, return_failures=True)
    )
    assert [r.y if r else None for r in results] == [None if i == 4 else 2 * i for i in range(12)]
    assert [f.index for f in failures] == [4]
    assert 1 < peak <= 3


def test_abatch_max_errors() -> None:
    async def fail(messages: Any, kwargs: Any) -> Any:
        return sf.ProviderError("down")

    lm = ScriptedLM(fail)
    with pytest.raises(BatchError):
        asyncio.run(
            program(lm).abatch([{"x": i} for i in range(20)], concurrency=1, max_errors=1, progress=False)
        )
    assert len(lm.calls) == 2  # no example started after the second failure


def test_progress_auto_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress_wanted(True) is True and progress_wanted(False) is False

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("sys.stderr", Tty())
    assert progress_wanted(None) is True
    monkeypatch.setenv("CI", "true")
    assert progress_wanted(None) is False
    monkeypatch.delenv("CI")
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a file or pipe: no bar
    assert progress_wanted(None) is False


def test_progress_counts_done_failed_and_tokens() -> None:
    bar = BatchProgress(3, enabled=False)
    bar.advance(ok=True, tokens=10)
    bar.advance(ok=False, tokens=5)
    assert (bar.done, bar.failed, bar.tokens) == (2, 1, 15)


def test_progress_bar_renders_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    import rich.console

    buffer = io.StringIO()
    real = rich.console.Console

    def console(*args: Any, **kwargs: Any) -> Any:
        kwargs.update(file=buffer, force_terminal=True, width=120)
        kwargs.pop("stderr", None)
        return real(*args, **kwargs)

    monkeypatch.setattr(rich.console, "Console", console)
    results = program(doubling_lm(fail_on={2})).batch([{"x": i} for i in range(4)], progress=True)
    assert results[2] is None
    text = buffer.getvalue()
    assert "4/4" in text and "1 failed" in text
    # generated tokens only (0 + 1 + 3 over 3 successes), as summaries report them; prompt tokens
    # (3 * 10) are not added in
    assert "4 generated tokens" in text
