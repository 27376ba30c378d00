"""The process-wide runtime (sigform.runtime): one background loop, and forks that never hang.

The fork tests run a script in a fresh interpreter (a fork of pytest itself would run pytest's
own code in the child); each forked child must finish within a timeout, checked by the script,
and the script as a whole runs under one: a hang fails the test instead of hanging the suite.
Each case is repeated, since the hangs it guards against were intermittent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from sigform import runtime

ROOT = Path(__file__).resolve().parents[1]
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")

# the script's shared part: a cached LM whose backend answers from a script (no network), and a
# helper that waits for a forked child for at most `seconds` (killing it and failing on a hang)
PRELUDE = """
import os, sys, threading, time
import sigform as sf
from sigform.testing import ScriptedBackend

def make_lm(**kw):
    backend = ScriptedBackend(lambda messages, kwargs: "answer to " + messages[-1]["content"])
    return sf.LM("openai/gpt-4o-mini", backend=backend, **kw)

def wait_child(pid, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, f"child failed: {status}"
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise SystemExit(f"HUNG: child {pid} did not finish in {seconds} s")
"""


def run_script(body: str, cache_dir: Path, timeout: float = 120) -> str:
    script = cache_dir / "script.py"  # a file: multiprocessing's spawn children import it
    script.write_text(PRELUDE + textwrap.dedent(body), encoding="utf-8")
    env = {**os.environ, "SIGFORM_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the script hung (no answer in {timeout} s): {exc.stderr}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def disk_entries(cache_dir: Path) -> int:
    import diskcache

    with diskcache.Cache(str(cache_dir / "lm")) as disk:
        return len(disk)


@needs_fork
def test_a_child_forked_after_cached_calls_exits_and_its_answers_reach_the_disk(tmp_path: Path) -> None:
    # before: the child's exit joined the disk writer's queue inherited half-alive, for ever
    run_script(
        """
        lm = make_lm()
        for round in range(10):
            lm(f"parent {round}")  # a cached call: the disk writer has work queued
            pid = os.fork()
            if pid == 0:
                lm(f"child {round}")
                sys.exit(0)  # a normal exit: atexit flushes the child's writes
            wait_child(pid)
        sf.lm.cache.get_cache().flush()
        """,
        tmp_path,
    )
    assert disk_entries(tmp_path) == 20


@needs_fork
def test_a_multiprocessing_childs_cached_answers_reach_the_disk(tmp_path: Path) -> None:
    # before: a multiprocessing child ends without atexit, and its 5 writes were lost
    run_script(
        """
        import multiprocessing

        def child(index):
            lm = make_lm()
            for k in range(5):
                lm(f"child {index} question {k}")

        if __name__ == "__main__":
            lm = make_lm()
            lm("parent")
            for method in ("fork", "spawn"):
                ctx = multiprocessing.get_context(method)
                for index in range(3):
                    process = ctx.Process(target=child, args=(f"{method}{index}",))
                    process.start()
                    process.join(60)
                    assert process.exitcode == 0, (method, process.exitcode)
            sf.lm.cache.get_cache().flush()
        """,
        tmp_path,
        timeout=240,
    )
    assert disk_entries(tmp_path) == 1 + 2 * 3 * 5


@needs_fork
def test_a_child_forked_while_another_thread_holds_the_rate_limiter_is_not_stuck(tmp_path: Path) -> None:
    run_script(
        """
        from sigform.lm.rate_limit import limiter_of

        lm = make_lm(rpm=60_000, cache=False)
        lm("warm")
        bucket = limiter_of(lm)
        for _ in range(10):
            held, release = threading.Event(), threading.Event()

            def hold():
                with bucket._lock:
                    held.set()
                    release.wait()

            thread = threading.Thread(target=hold)
            thread.start()
            held.wait()
            pid = os.fork()
            if pid == 0:
                lm("in the child")  # before: reserve() waited for the parent thread's lock
                os._exit(0)
            try:
                wait_child(pid)
            finally:
                release.set()
                thread.join()
        """,
        tmp_path,
    )


@needs_fork
def test_a_fork_at_any_moment_of_a_fresh_process_first_call_is_not_stuck(tmp_path: Path) -> None:
    # before: building an LM started a background warm-up importing the call path; a fork made
    # from inside an import (a module that forks as it loads) did not wait for it, and the child
    # waited for ever for a module lock held by a thread it did not have (1-2 children of 5).
    # Each fresh interpreter forks at another moment after building its LM
    (tmp_path / "forks_on_import.py").write_text(
        textwrap.dedent(
            """
            import os
            import sigform as sf
            from script import make_lm, wait_child

            pid = os.fork()
            if pid == 0:
                program = sf.Predict("question -> answer", lm=make_lm(cache=False))
                try:
                    program(question="q")
                except Exception:
                    pass  # an answer that does not parse is fine: the child must not hang
                os._exit(0)
            wait_child(pid)
            """
        ),
        encoding="utf-8",
    )
    for delay_ms in (0, 1, 2, 5, 10, 20, 50, 100):
        run_script(
            f"""
            if __name__ == "__main__":
                lm = sf.LM("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", api_key="k", cache=False)
                time.sleep({delay_ms} / 1000)
                import forks_on_import
            """,
            tmp_path,
        )


def test_run_runs_in_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")

    async def read() -> str:
        return var.get()

    def in_thread(value: str) -> str:
        var.set(value)
        return runtime.run(read())

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert list(pool.map(in_thread, ["a", "b"])) == ["a", "b"]


def test_an_interrupted_wait_cancels_the_work_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    class Interrupted(concurrent.futures.Future):  # type: ignore[type-arg]
        def result(self, timeout: Any = None) -> Any:
            started.wait(10)
            raise KeyboardInterrupt

    monkeypatch.setattr(runtime.concurrent.futures, "Future", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        runtime.run(work())
    assert cancelled.wait(10)  # the request does not go on after its caller is gone


def test_a_sync_call_from_work_on_the_loop_knows_it_is_there() -> None:
    async def where() -> bool:
        return runtime.in_loop() and await asyncio.to_thread(runtime.in_loop)

    assert not runtime.in_loop()
    assert runtime.run(where())


def test_one_fork_hook_and_one_exit_hook_in_the_package() -> None:
    HOOKS = ("register_at_fork(", "atexit.register(")
    offenders = [
        f"{path.relative_to(ROOT)}"
        for path in (ROOT / "sigform").rglob("*.py")
        if path.name != "runtime.py"
        and any(hook in path.read_text(encoding="utf-8") for hook in HOOKS)
    ]
    assert offenders == []
