"""Background warm-up of a fresh process's call path (issue 18 item 1): building an LM loads the
adapter stack in one background thread, and a call waits for that thread instead of importing
beside it (two threads importing one package's modules can deadlock). Structural checks in fresh
processes and in-process ordering checks; no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import sigform as sf
from sigform import warmup
from sigform.testing import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]

LOADED_AFTER_BUILD = """
import json, sys, threading
import sigform as sf
before = sorted(m for m in ("sigform.adapters.chat", "jinja2", "openai") if m in sys.modules)
lm = sf.LM({model!r}, backend={backend}, cache=False)
for thread in threading.enumerate():
    if thread.name == "sigform-warmup":
        thread.join(60)
after = sorted(m for m in ("sigform.adapters.chat", "jinja2", "openai") if m in sys.modules)
print(json.dumps({{"before": before, "after": after, "calls": lm.stats["calls"]}}))
"""


def _fresh(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_building_an_lm_loads_the_call_path_without_a_call() -> None:
    backend = "__import__('sigform.testing').testing.ScriptedBackend(['x'])"
    code = LOADED_AFTER_BUILD.format(model="anthropic/claude-3-5-haiku-latest", backend=backend)
    seen = _fresh(code)
    # the adapter stack and its templates, not the SDK (this LM will not send through it)
    assert seen == {"before": [], "after": ["jinja2", "sigform.adapters.chat"], "calls": 0}


def test_a_call_right_after_building_the_lm_works_in_a_fresh_process() -> None:
    code = (
        "import sigform as sf\n"
        "from sigform.testing import ScriptedBackend\n"
        "answer = '[[ ## answer ## ]]\\n4\\n[[ ## completed ## ]]'\n"
        "lm = sf.LM('openai/gpt-4o-mini', backend=ScriptedBackend([answer]), cache=False)\n"
        "print(sf.Predict('question -> answer', lm=lm, adapter=sf.ChatAdapter())(question='2+2?').answer)\n"
    )
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                             timeout=120)
        assert (out.returncode, out.stdout.strip(), out.stderr.strip()) == (0, "4", "")


def test_a_call_waits_for_a_running_warm_up_before_it_imports_anything() -> None:
    finished: list[float] = []
    release = threading.Event()

    def slow_task() -> None:
        release.wait(30)
        finished.append(time.monotonic())

    backend = ScriptedBackend(["[[ ## answer ## ]]\n4\n[[ ## completed ## ]]"])
    lm = sf.LM("openai/gpt-4o-mini", backend=backend, cache=False)
    program = sf.Predict("question -> answer", lm=lm, adapter=sf.ChatAdapter())
    warmup.register("test: slow task", slow_task)
    warmup.start("test: slow task")
    answered: list[float] = []
    caller = threading.Thread(target=lambda: answered.append((program(question="2+2?"), time.monotonic())[1]))
    caller.start()
    caller.join(0.3)
    assert caller.is_alive() and not backend.requests  # held before its request
    release.set()
    caller.join(30)
    assert finished and answered and finished[0] <= answered[0]
    assert len(backend.requests) == 1


def test_each_task_starts_once_per_process_and_a_failing_task_is_ignored() -> None:
    runs: list[str] = []

    def failing() -> None:
        runs.append("ran")
        raise RuntimeError("no network here")

    warmup.register("test: failing task", failing)
    warmup.start("test: failing task", "test: no such task")
    warmup.wait()
    warmup.start("test: failing task")
    warmup.wait()
    assert runs == ["ran"]
    assert not [t for t in threading.enumerate() if t.name == "sigform-warmup"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_waits_for_the_warm_up_so_the_child_inherits_no_held_import_lock() -> None:
    finished: list[float] = []

    def slow_task() -> None:
        time.sleep(0.5)
        finished.append(time.monotonic())

    warmup.register("test: task before a fork", slow_task)
    warmup.start("test: task before a fork")
    pid = os.fork()
    if pid == 0:  # the child: exits at once, whatever happens
        os._exit(0)
    forked = time.monotonic()
    os.waitpid(pid, 0)
    assert finished and finished[0] <= forked


def test_importing_a_module_that_imports_from_a_lazy_package_right_after_building_an_lm_never_hangs() -> None:
    # the main thread holds sigform.predict.predict's module lock while its body runs `from
    # sigform.predict import context_vars` (the package's lazy __getattr__); the warm-up waits for
    # that lock, so a wait() there would join a thread that waits for the joiner
    code = (
        "import sigform as sf\n"
        "lm = sf.LM('openai/gpt-4o-mini', api_key='sk-test-0000')\n"
        "from sigform.predict.predict import Predict\n"
        "from sigform.adapters.json_adapter import JSONAdapter\n"
        "print('ok')\n"
    )
    for _ in range(3):
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                                 timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("importing sigform.predict.predict beside the warm-up hung for 60 s")
        assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr[-2000:]


def test_the_warm_up_emits_no_event_to_the_users_callbacks() -> None:
    code = (
        "import json, threading\n"
        "import sigform as sf\n"
        "from sigform import hooks\n"
        "seen = []\n"
        "class Spy(hooks.Callback):\n"
        "    def on_format(self, event): seen.append('format')\n"
        "    def on_parse(self, event): seen.append('parse')\n"
        "hooks.register(Spy())\n"
        "lm = sf.LM('anthropic/claude-3-5-haiku-latest', api_key='sk-test-0000')\n"
        "for thread in threading.enumerate():\n"
        "    if thread.name == 'sigform-warmup':\n"
        "        thread.join(60)\n"
        "import sys\n"
        "print(json.dumps({'seen': seen, 'warmed': 'sigform.adapters.chat' in sys.modules}))\n"
    )
    assert _fresh(code) == {"seen": [], "warmed": True}


def test_muted_hides_events_only_inside_its_block() -> None:
    from sigform import hooks

    seen: list[str] = []

    class Spy:
        def on_format(self, event: object) -> None:
            seen.append("format")

    spy = Spy()
    signature = sf.make_signature("question -> answer")
    with sf.context(callbacks=[spy]):
        with hooks.muted():
            sf.ChatAdapter().format(signature, [], {"question": "?"})
        assert seen == []
        sf.ChatAdapter().format(signature, [], {"question": "?"})
    assert seen == ["format"]


def test_a_first_call_with_no_lm_or_adapter_configured_does_not_wait_on_itself() -> None:
    # the README's first example: no LM, no adapter. The call builds the default LM, which starts
    # the warm-up, then the default adapter under the defaults' lock; the warm-up builds that same
    # adapter. Holding the lock while waiting for the warm-up hung the call for good. The task is
    # delayed so the call reaches the lock first, as a real first call does (building sf.LM()
    # takes far less than the warm-up's imports).
    code = (
        "import time\n"
        "import sigform as sf\n"
        "from sigform import warmup\n"
        "from sigform.predict import predict\n"
        "from sigform.testing import ScriptedBackend\n"
        "call_path = warmup._tasks[warmup.CALL_PATH]\n"
        "warmup.register(warmup.CALL_PATH, lambda: (time.sleep(0.5), call_path()))\n"
        "answer = '[[ ## answer ## ]]\\n4\\n[[ ## completed ## ]]'\n"
        "predict.default_lm = lambda: sf.LM('openai/gpt-4o-mini', backend=ScriptedBackend([answer]),"
        " cache=False)\n"
        "print(sf.Predict('question -> answer')(question='2+2?').answer)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (out.returncode, out.stdout.strip(), out.stderr.strip()) == (0, "4", "")


def test_a_warm_up_waiting_for_a_lock_the_caller_holds_is_not_waited_for_ever() -> None:
    held = threading.Lock()
    got_it: list[bool] = []

    def task_needing_the_lock() -> None:
        with held:
            got_it.append(True)

    returned = threading.Event()

    def caller() -> None:
        with held:  # e.g. a library lock taken before the first call
            warmup.register("test: task needing a held lock", task_needing_the_lock)
            warmup.start("test: task needing a held lock")
            warmup.wait()  # a plain join would wait for a task that waits for us
            returned.set()

    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    assert returned.wait(warmup.STALLED + 30), "wait() joined a warm-up that waits for the caller"
    thread.join(30)
    warmup.wait()
    assert got_it == [True]  # the task finished once the caller let go
