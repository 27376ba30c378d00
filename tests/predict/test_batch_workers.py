"""``batch`` takes a worker count of at least one."""

from __future__ import annotations

import pytest

import sigform as sf


def test_batch_refuses_zero_workers_instead_of_using_the_default() -> None:
    import asyncio

    from sigform.testing import ScriptedLM

    prog = sf.Predict("q -> a", lm=ScriptedLM([]))
    with pytest.raises(ValueError, match="num_threads"):
        prog.batch([{"q": "x"}], num_threads=0)
    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(prog.abatch([{"q": "x"}], concurrency=0))


def test_ctrl_c_during_a_threaded_batch_returns_without_waiting_for_requests_in_flight() -> None:
    import json
    import os
    import signal
    import threading
    import time

    from sigform.testing.providers import OpenAIChatFake, Reply

    # each answer takes 30 s; Ctrl-C (KeyboardInterrupt in the main thread) comes once 4 are in
    # flight. The batch used to join its workers first, i.e. wait for those requests to end
    with OpenAIChatFake(default=Reply(json.dumps({"answer": "x"})), latency=30) as fake:
        lm = sf.LM("openai/gpt-4o-mini", api_base=fake.api_base, api_key="sk-test", cache=False,
                   num_retries=0)
        program = sf.Predict("question -> answer", lm=lm, adapter=sf.JSONAdapter())

        def interrupt_once_in_flight() -> None:
            deadline = time.monotonic() + 20
            while len(fake.requests) < 4 and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGINT)  # a real signal: it wakes the waiting main thread

        threading.Thread(target=interrupt_once_in_flight, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            program.batch([{"question": f"q{i}"} for i in range(20)], num_threads=4, progress=False)
        interrupted_after = time.monotonic() - started
        assert len(fake.requests) == 4  # the examples not started yet never ran
    assert interrupted_after < 25  # well under the 30 s answer (a cap, not a timing)
