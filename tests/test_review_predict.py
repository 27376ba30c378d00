"""Review findings in sigform.predict: field access shadowed by the objects' own names."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import sigform as sf
from sigform.predict import Completions, Example, Prediction
from sigform.signatures import RESERVED_FIELD_NAMES


@pytest.mark.parametrize("cls", [Prediction, Example])
def test_every_public_name_of_a_record_is_a_reserved_field_name(cls: type) -> None:
    # Prediction.from_candidates shadowed an output field of that name (pred.from_candidates gave
    # the classmethod); a signature may therefore not declare any of these names
    public = {n for n in dir(cls) if not n.startswith("_")}
    assert public <= RESERVED_FIELD_NAMES, public - RESERVED_FIELD_NAMES
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
