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
