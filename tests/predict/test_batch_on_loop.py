"""A threaded batch of a Predict on the fast path runs as abatch on the I/O loop
(sigform.predict.batch_on_loop): the same results, failures, settings and hooks, without 64
threads taking turns at the GIL only to wait for the loop; anything else still runs in threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body

import sigform as sf
from sigform.hooks import Callback, Event
from sigform.lm.io_loop import run_in_io_loop
from sigform.predict import BatchError, Predict
from sigform.predict.batch_on_loop import runs_on_io_loop
from sigform.testing import ScriptedLM


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def doubling(server: FakeOpenAIServer, fail_on: int | None = None) -> None:
    """The server answers ``y = 2x``, with a 500 for ``x == fail_on``."""

    def reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        x = int(body["messages"][-1]["content"].split("[[ ## x ## ]]")[1].split()[0])
        if x == fail_on:
            return Reply(status=500, body={"error": {"message": "boom"}})
        return Reply(body=completion_body([f"[[ ## y ## ]]\n{2 * x}\n\n[[ ## completed ## ]]"]))

    server.reply = reply


def fast_lm(server: FakeOpenAIServer, **kw: Any) -> sf.LM:
    return sf.LM("openai/fake-model", api_base=server.api_base, api_key="k", cache=False, num_retries=0, **kw)


class Threads(Callback):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.modules = 0

    def on_module_start(self, event: Event) -> None:
        self.names.add(threading.current_thread().name)
        self.modules += 1


def test_a_fast_path_predict_batch_runs_on_the_io_loop_with_the_callers_settings(
    lm_server: FakeOpenAIServer,
) -> None:
    doubling(lm_server)
    seen = Threads()
    with sf.context(lm=fast_lm(lm_server), callbacks=[seen]):
        program = Predict("x: int -> y: int", adapter=sf.ChatAdapter())
        results = program.batch([{"x": i} for i in range(12)], num_threads=4, progress=False)
    assert [r.y for r in results] == [2 * i for i in range(12)]
    assert seen.modules == 12 and seen.names == {"sigform-io"}  # threads: sigform-batch_0..3


def test_failures_and_max_errors_are_those_of_a_batch(lm_server: FakeOpenAIServer) -> None:
    doubling(lm_server, fail_on=3)
    program = Predict("x: int -> y: int", lm=fast_lm(lm_server))
    results, failures = program.batch(
        [{"x": i} for i in range(6)], num_threads=3, progress=False, return_failures=True
    )
    assert [r.y if r else None for r in results] == [0, 2, 4, None, 8, 10]
    assert [f.index for f in failures] == [3] and isinstance(failures[0].error, sf.ProviderError)
    with pytest.raises(BatchError):
        program.batch([{"x": 3}] * 4, num_threads=2, max_errors=0, progress=False)


def test_usage_is_tracked_in_the_callers_context(lm_server: FakeOpenAIServer) -> None:
    doubling(lm_server)
    program = Predict("x: int -> y: int", lm=fast_lm(lm_server))
    with sf.track_usage() as tracker:
        program.batch([{"x": i} for i in range(5)], num_threads=5, progress=False)
    assert tracker.requests == 5 and tracker.usage.total_tokens > 0


class OwnForward(Predict):
    def forward(self, *args: Any, **kwargs: Any) -> Any:  # a user's sync-only change
        return super().forward(*args, **kwargs)


class OwnRun(sf.ChatAdapter):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        return super().run(*args, **kwargs)


def test_only_sigform_twins_on_a_plain_fast_path_lm_leave_the_threads(lm_server: FakeOpenAIServer) -> None:
    lm = fast_lm(lm_server)
    assert runs_on_io_loop(Predict("x: int -> y: int", lm=lm))
    assert runs_on_io_loop(sf.ChainOfThought("x: int -> y: int", lm=lm))
    assert not runs_on_io_loop(OwnForward("x: int -> y: int", lm=lm))
    assert not runs_on_io_loop(Predict("x: int -> y: int", lm=lm, adapter=OwnRun()))
    assert not runs_on_io_loop(Predict("x: int -> y: int", lm=ScriptedLM(["x"])))
    assert not runs_on_io_loop(Predict("x: int -> y: int", lm=fast_lm(lm_server, fast_path=False)))
    assert not runs_on_io_loop(Predict("x: int -> y: int"))  # no LM given: the default one, in threads
    with sf.context(lm=lm):
        assert runs_on_io_loop(Predict("x: int -> y: int"))


def test_a_user_forward_or_executor_still_runs_in_worker_threads(lm_server: FakeOpenAIServer) -> None:
    doubling(lm_server)
    seen = Threads()
    lm = fast_lm(lm_server)
    program = OwnForward("x: int -> y: int", lm=lm, callbacks=[seen])
    results = program.batch([{"x": i} for i in range(4)], num_threads=2, progress=False)
    assert [r.y for r in results] == [0, 2, 4, 6]
    assert seen.names and all(name.startswith("sigform-batch") for name in seen.names)
    seen = Threads()
    with ThreadPoolExecutor(2, thread_name_prefix="mine") as pool:
        program = Predict("x: int -> y: int", lm=lm, callbacks=[seen])
        program.batch([{"x": 1}, {"x": 2}], executor=pool, progress=False)
    assert seen.names and all(name.startswith("mine") for name in seen.names)


def test_run_in_io_loop_runs_in_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")

    async def read() -> str:
        return var.get()

    def in_thread(value: str) -> str:
        var.set(value)
        return run_in_io_loop(read())

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(in_thread, ["a", "b"])) == ["a", "b"]


def test_an_interrupted_wait_cancels_the_work_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from sigform.lm import io_loop

    started, cancelled = threading.Event(), threading.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    real = asyncio.run_coroutine_threadsafe

    def interrupted(coro: Any, loop: Any) -> Any:
        future = real(coro, loop)
        started.wait(10)
        monkeypatch.setattr(future, "result", lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
        return future

    monkeypatch.setattr(io_loop.asyncio, "run_coroutine_threadsafe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_in_io_loop(work())
    assert cancelled.wait(10)  # before: the request went on after its caller was gone
