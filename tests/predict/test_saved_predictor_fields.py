"""What a saved predictor holds: no header options, and a clear error without its signature."""

from __future__ import annotations

import pytest

import sigform as sf


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
