"""Review findings in sigform.predict: field access shadowed by the objects' own names."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from lm_fake_openai import FakeOpenAIServer, Reply, completion_body, stream_chunks

import sigform as sf
from sigform.predict import Completions, Example, Prediction
from sigform.signatures import RESERVED_FIELD_NAMES

pytest_plugins = ["lm_fake_openai"]  # fixtures: isolated_cache


@pytest.mark.parametrize("cls", [Prediction, Example])
def test_every_public_name_of_a_record_is_a_reserved_field_name(cls: type) -> None:
    # Prediction.from_candidates shadowed an output field of that name (pred.from_candidates gave
    # the classmethod); a signature may therefore not declare any of these names. The exception:
    # Example.inputs()/labels(), which a field of the same name wins over (``labels`` is a common
    # output name), so they shadow nothing
    from sigform.predict.example import _FieldOrMethod

    public = {n for n in dir(cls) if not n.startswith("_")}
    yielding = {n for n in public if isinstance(cls.__dict__.get(n), _FieldOrMethod)}
    assert public - yielding <= RESERVED_FIELD_NAMES, public - yielding - RESERVED_FIELD_NAMES
    for name in yielding:
        assert getattr(cls(**{name: "value"}), name) == "value"
    with pytest.raises(sf.SignatureError, match="reserved"):
        sf.make_signature("q -> from_candidates")


def test_completions_read_fields_named_like_sequence_methods() -> None:
    # Completions inherited Sequence.count/index, so `pred.completions.count` was a bound method
    cands = [Prediction(count=n, index=i) for i, n in enumerate([3, 4])]
    comps = Prediction.from_candidates(cands).completions
    assert comps.count == [3, 4]
    assert comps.index == [0, 1]
    assert isinstance(comps, Sequence) and isinstance(comps, Completions)
    assert list(reversed(comps)) == cands[::-1] and cands[0] in comps and comps[1:] == tuple(cands[1:])


def test_header_options_are_neither_saved_nor_shown(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = "sk-review-header-0123456789"
    prog = sf.Predict("q -> a", temperature=0.1, headers={"Authorization": f"Bearer {secret}"},
                      extra_headers={"x-api-key": secret})
    path = prog.save(tmp_path / "p.json")
    assert secret not in path.read_text() and secret not in repr(prog)
    assert sf.Predict("q -> a").load(path).config == {"temperature": 0.1}
    assert "temperature=0.1" in repr(prog)


def test_a_saved_predictor_without_its_signature_is_a_program_state_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    path = sf.Predict("q -> a").save(tmp_path / "p.json")
    data = json.loads(path.read_text())
    del data["predictors"]["self"]["signature"]
    path.write_text(json.dumps(data))
    with pytest.raises(sf.ProgramStateError, match="signature"):
        sf.Predict("q -> a").load(path)


def test_batch_refuses_zero_workers_instead_of_using_the_default() -> None:
    import asyncio

    from sigform.testing import ScriptedLM

    prog = sf.Predict("q -> a", lm=ScriptedLM([]))
    with pytest.raises(ValueError, match="num_threads"):
        prog.batch([{"q": "x"}], num_threads=0)
    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(prog.abatch([{"q": "x"}], concurrency=0))


# -- per-program callbacks see everything the program does ------------------------------------

_ANSWER = "[[ ## a ## ]]\nParis\n\n[[ ## completed ## ]]"


class _Names(sf.Callback):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_request(self, event: sf.hooks.Event) -> None:
        self.names.append("request")

    def on_response(self, event: sf.hooks.Event) -> None:
        self.names.append("response")

    def on_format(self, event: sf.hooks.Event) -> None:
        self.names.append("format")

    def on_parse(self, event: sf.hooks.Event) -> None:
        self.names.append("parse")

    def on_module_start(self, event: sf.hooks.Event) -> None:
        self.names.append("module_start")

    def on_module_end(self, event: sf.hooks.Event) -> None:
        self.names.append("module_end")


_INSIDE = ["module_start", "format", "request", "response", "parse", "module_end"]


def _answer(body: dict[str, object], headers: dict[str, str]) -> Reply:
    if body.get("stream"):
        return Reply(chunks=stream_chunks(_ANSWER))
    return Reply(body=completion_body([_ANSWER]))


@pytest.fixture
def answering_lm() -> object:
    server = FakeOpenAIServer().start()
    server.reply = _answer
    yield lambda **kw: sf.LM("openai/fake", api_base=server.api_base, fast_path=True, cache=False, **kw)
    server.stop()


@pytest.mark.parametrize("how", ["call", "acall", "stream", "astream"])
def test_program_callbacks_see_the_lm_and_adapter_events_inside_it(answering_lm, how: str) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    rec = _Names()
    lm = answering_lm()
    prog = sf.Predict("q -> a", lm=lm, callbacks=[rec])
    if how == "call":
        assert prog(q="Capital of France?").a == "Paris"
    elif how == "acall":
        assert asyncio.run(prog.acall(q="Capital of France?")).a == "Paris"
    elif how == "stream":
        assert list(prog.stream(q="Capital of France?"))[-1].a == "Paris"
    else:

        async def consume() -> list[object]:
            return [e async for e in prog.astream(q="Capital of France?")]

        assert asyncio.run(consume())[-1].a == "Paris"
    assert rec.names == _INSIDE
    # the scope ends with the program: a direct LM call afterwards is not the program's
    lm([{"role": "user", "content": "hi"}])
    assert rec.names == _INSIDE


def test_a_program_callback_also_registered_elsewhere_sees_each_event_once(answering_lm) -> None:  # type: ignore[no-untyped-def]
    rec = _Names()
    prog = sf.Predict("q -> a", lm=answering_lm(callbacks=[rec]), callbacks=[rec])
    with sf.context(callbacks=[rec]):
        prog(q="Capital of France?")
    assert rec.names == _INSIDE
    sf.hooks.register(rec)
    try:
        rec.names.clear()
        prog(q="Capital of France?")
    finally:
        sf.hooks.unregister(rec)
    assert rec.names == _INSIDE


def test_an_outer_programs_callbacks_see_the_inner_programs_lm_calls(answering_lm) -> None:  # type: ignore[no-untyped-def]
    outer_rec, inner_rec = _Names(), _Names()
    inner = sf.Predict("q -> a", lm=answering_lm(), callbacks=[inner_rec])

    class Outer(sf.Module):
        def forward(self, q: str) -> object:
            return inner(q=q)

    outer = Outer()
    outer.callbacks = [outer_rec]
    outer(q="Capital of France?")
    assert outer_rec.names == ["module_start", *_INSIDE, "module_end"]
    assert inner_rec.names == _INSIDE


# -- Predict.stream / astream take the per-call options a plain call takes ----------------------

_QA_JSON = '{"answer": "Paris", "confidence": 0.9}'


@pytest.mark.parametrize("how", ["stream", "astream"])
def test_stream_takes_per_call_lm_adapter_demos_and_config(how: str) -> None:
    import asyncio

    from sigform.testing import ScriptedLM

    unused = ScriptedLM([])
    lm = ScriptedLM([_QA_JSON])
    prog = sf.Predict("question -> answer, confidence: float", lm=unused, temperature=0.1)
    demo = {"question": "Capital of Italy?", "answer": "Rome", "confidence": 1.0}
    options = {"lm": lm, "adapter": sf.JSONAdapter(), "demos": [demo], "config": {"temperature": 0.7}}
    if how == "stream":
        items = list(prog.stream(question="Capital of France?", **options))
    else:

        async def consume() -> list[object]:
            return [e async for e in prog.astream(question="Capital of France?", **options)]

        items = asyncio.run(consume())
    pred = items[-1]
    assert isinstance(pred, Prediction) and pred.answer == "Paris" and pred.confidence == 0.9
    assert unused.calls == [] and len(lm.calls) == 1
    call = lm.calls[0]
    assert call.kwargs["temperature"] == 0.7  # the call's config over the program's
    sent = "\n".join(str(m["content"]) for m in call.messages)
    assert "Capital of Italy?" in sent and "Rome" in sent  # the call's demos
    assert "JSON" in sent or "json" in sent  # the call's adapter


def test_stream_still_rejects_unknown_inputs() -> None:
    from sigform.testing import ScriptedLM

    prog = sf.Predict("question -> answer", lm=ScriptedLM([]))
    with pytest.raises(sf.InputError, match="questoin"):
        list(prog.stream(questoin="x"))


# -- nested BestOfN / Refine: every (outer, inner) attempt is its own rollout -------------------


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
