"""program.save / program.load: JSON state by predictor and field name, no secrets, clear mismatches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.errors import SignatureError
from sigform.predict import ChainOfThought, Example, Module, Predict, ProgramStateError
from sigform.testing import ScriptedLM


class Place(BaseModel):
    city: str
    country: str


class Locate(sf.Signature):
    """Find where the landmark is."""

    landmark: str = sf.InputField(desc="a famous place")
    place: Place = sf.OutputField()
    confidence: float = sf.OutputField(ge=0, le=1)


class Pipeline(Module):
    def __init__(self) -> None:
        self.locate = Predict(Locate)
        self.explain = ChainOfThought("landmark, city -> blurb")

    def forward(self, landmark: str) -> sf.Prediction:
        place = self.locate(landmark=landmark).place
        return self.explain(landmark=landmark, city=place.city)


def trained() -> Pipeline:
    prog = Pipeline()
    prog.locate.signature = Locate.with_instructions("Locate precisely.")
    prog.locate.demos = [
        Example(
            landmark="Eiffel Tower", place=Place(city="Paris", country="France"), confidence=0.9
        ).with_inputs("landmark")
    ]
    prog.locate.config = {"temperature": 0.2, "api_key": "sk-secret-123"}
    prog.explain.demos = [{"landmark": "Big Ben", "city": "London", "reasoning": "r", "blurb": "A clock."}]
    return prog


def test_round_trip(tmp_path: Path) -> None:
    path = trained().save(tmp_path / "prog.json")
    fresh = Pipeline().load(path)
    assert fresh.locate.signature.instructions == "Locate precisely."
    assert fresh.locate.signature.fields["landmark"].desc == "a famous place"
    assert dict(fresh.locate.signature.fields["confidence"].constraints) == {"ge": 0, "le": 1}
    demo = fresh.locate.demos[0]
    assert demo.place == Place(city="Paris", country="France")  # rebuilt as the declared type
    assert demo.to_dict("inputs") == {"landmark": "Eiffel Tower"}
    assert fresh.locate.config == {"temperature": 0.2}
    assert fresh.explain.demos[0].blurb == "A clock."
    assert fresh.dump_state() == trained().dump_state()  # secrets were never part of the state


def test_file_layout_and_no_secrets(tmp_path: Path) -> None:
    path = trained().save(tmp_path / "sub" / "prog.json")
    text = path.read_text()
    assert "sk-secret-123" not in text and "api_key" not in text
    data = json.loads(text)
    assert data["format"] == "sigform.program" and data["version"] == 1
    assert list(data["predictors"]) == ["locate", "explain"]
    locate = data["predictors"]["locate"]
    assert [f["name"] for f in locate["signature"]["fields"]] == ["landmark", "place", "confidence"]
    assert locate["demos"][0]["values"]["place"] == {"city": "Paris", "country": "France"}
    assert data["predictors"]["explain"]["type"] == "ChainOfThought"


def test_lm_settings_saved_without_secrets_and_restored(tmp_path: Path) -> None:
    lm = sf.LM("openai/gpt-4o-mini", api_key="sk-very-secret", temperature=0.3)
    prog = Predict("q -> a", lm=lm)
    path = prog.save(tmp_path / "p.json")
    assert "sk-very-secret" not in path.read_text()
    assert Predict("q -> a").load(path).lm is None  # the saved LM is used only when asked for
    fresh = Predict("q -> a").load(path, restore_lm=True)
    assert fresh.lm is not None and fresh.lm.model == "openai/gpt-4o-mini"
    assert fresh.lm.kwargs.get("temperature") == 0.3
    own = ScriptedLM([])
    kept = Predict("q -> a", lm=own).load(path, restore_lm=True)
    assert kept.lm is own  # an LM set on the program is never replaced


def test_scripted_lm_is_not_saved(tmp_path: Path) -> None:
    path = Predict("q -> a", lm=ScriptedLM([])).save(tmp_path / "p.json")
    assert json.loads(path.read_text())["predictors"]["self"]["lm"] is None


def test_predictor_name_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    path = trained().save(tmp_path / "prog.json")

    class Renamed(Module):
        def __init__(self) -> None:
            self.find = Predict(Locate)
            self.explain = ChainOfThought("landmark, city -> blurb")

    target = Renamed()
    with pytest.raises(ProgramStateError, match=r"not saved: find.*saved but not in the program: locate"):
        target.load(path)
    assert target.find.demos == []  # nothing applied


def test_field_mismatch_is_a_clear_error_and_nothing_is_applied(tmp_path: Path) -> None:
    path = trained().save(tmp_path / "prog.json")

    class Changed(Module):
        def __init__(self) -> None:
            self.locate = Predict(Locate)
            self.explain = ChainOfThought("landmark, town -> blurb")

    target = Changed()
    with pytest.raises(SignatureError, match=r"predictor 'explain'.*town"):
        target.load(path)
    assert target.locate.demos == [] and target.locate.signature == Locate


def test_type_change_and_predictor_kind_change_are_errors(tmp_path: Path) -> None:
    path = Predict("q -> a: int").save(tmp_path / "p.json")
    with pytest.raises(SignatureError, match="saved with type int"):
        Predict("q -> a: str").load(path)
    with pytest.raises(ProgramStateError, match="saved as a Predict but is a ChainOfThought"):
        ChainOfThought("q -> a: int").load(path)


def test_field_order_is_kept_from_the_program(tmp_path: Path) -> None:
    path = Predict("a, b -> c, d").save(tmp_path / "p.json")
    fresh = Predict("b, a -> d, c").load(path)  # same names, other order: matched by name
    assert list(fresh.signature.fields) == ["b", "a", "d", "c"]


def test_not_a_program_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ProgramStateError, match="not valid JSON"):
        Predict("a -> b").load(bad)
    bad.write_text('{"hello": 1}')
    with pytest.raises(ProgramStateError, match="not a saved sigform program"):
        Predict("a -> b").load(bad)


def test_unserialisable_demo_value_is_a_clear_error(tmp_path: Path) -> None:
    prog = Predict({"a": (object, sf.InputField()), "b": sf.OutputField()}, demos=[{"a": object(), "b": "x"}])
    with pytest.raises(ProgramStateError, match=r"self.demos\[0\]"):
        prog.save(tmp_path / "p.json")
