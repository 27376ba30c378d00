"""Field access on records and completions is never shadowed by the objects' own names."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import sigform as sf
from sigform.predict import Completions, Example, Prediction
from sigform.signatures import RESERVED_FIELD_NAMES


@pytest.mark.parametrize("cls", [Prediction, Example])
def test_every_public_name_of_a_record_is_a_reserved_field_name(cls: type) -> None:
    # Prediction.from_candidates shadowed an output field of that name (pred.from_candidates gave
    # the classmethod); a signature may therefore not declare any of these names. The exceptions:
    # Example.inputs()/labels()/items()/..., which a field of the same name wins over (``labels``
    # is a common output name), so they shadow nothing; and Example.keys(), the mapping protocol
    # (``**ex``), whose field is read as ``ex["keys"]``
    from sigform.predict.example import _FieldOrMethod

    public = {n for n in dir(cls) if not n.startswith("_")} - ({"keys"} if cls is Example else set())
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
