"""``stream`` takes the same per-call LM, adapter, demos and config as a call, and the same
input checks."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.predict import Prediction

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
