"""Nested attempts (BestOfN / Refine inside one another) get distinct composed rollout ids,
keep the outer temperature, and are distinct LM cache entries."""

from __future__ import annotations

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body

import sigform as sf


def _zero(inputs: object, pred: object) -> float:
    return 0.0


@pytest.mark.parametrize("inner_cls", [sf.BestOfN, sf.Refine])
def test_nested_attempts_have_distinct_composed_rollout_ids(inner_cls: type) -> None:
    import asyncio

    from sigform.testing import ScriptedLM

    lm = ScriptedLM(lambda messages, kw: "[[ ## a ## ]]\nx\n\n[[ ## completed ## ]]")
    extra = {"threshold": 1.0} if inner_cls is sf.Refine else {}
    inner = inner_cls(sf.Predict("q -> a", lm=lm), N=2, reward_fn=_zero, **extra)
    outer = sf.BestOfN(inner, N=2, reward_fn=_zero, temperature=0.5)
    outer(q="x")
    # the inner run replaced the outer attempt number: outer attempt 1 reused ids 0 and 1
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # the inner run's own temperature (1.0) is its setting; an outer one is not lost when the inner
    # leaves temperature alone
    assert {c.kwargs["temperature"] for c in lm.calls} == {1.0}
    lm.calls.clear()
    asyncio.run(outer.acall(q="x"))
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_an_inner_run_without_temperature_keeps_the_outer_one() -> None:
    from sigform.testing import ScriptedLM

    lm = ScriptedLM(lambda messages, kw: "[[ ## a ## ]]\nx\n\n[[ ## completed ## ]]")
    inner = sf.BestOfN(sf.Predict("q -> a", lm=lm), N=1, reward_fn=_zero, temperature=None)
    sf.BestOfN(inner, N=2, reward_fn=_zero, temperature=0.5)(q="x")
    assert [c.kwargs["temperature"] for c in lm.calls] == [0.5, 0.5]
    assert [c.kwargs["rollout_id"] for c in lm.calls] == [(0, 0), (1, 0)]


def test_nested_attempts_are_distinct_lm_cache_entries(isolated_cache: object) -> None:
    server = FakeOpenAIServer().start()
    count = iter(range(100))
    server.reply = lambda body, headers: Reply(
        body=completion_body([f"[[ ## a ## ]]\nv{next(count)}\n\n[[ ## completed ## ]]"])
    )
    try:
        lm = sf.LM("openai/fake", api_base=server.api_base, fast_path=True)
        inner = sf.BestOfN(sf.Predict("q -> a", lm=lm), N=2, reward_fn=_zero)
        sf.BestOfN(inner, N=2, reward_fn=_zero)(q="x")
    finally:
        server.stop()
    assert len(server.requests) == 4  # each (outer, inner) attempt asked the model: no cache reuse
    assert [h.cache_hit for h in lm.history] == [False] * 4
