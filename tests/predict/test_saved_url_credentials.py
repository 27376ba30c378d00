"""An endpoint URL with credentials in it is saved without them (a saved file never carries a
credential), and the loss is said rather than left to surface as 401s: the file records which
parts went (never a value), loading warns unless the caller supplies the credentials (the
configured LM for the same endpoint gives its whole URL back), and map_program says so before
sending rows to workers."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import sigform as sf
from sigform.lm.saved_state import REMOVED, SavedStateWarning
from sigform.predict import Predict

URL = "https://user:hunter22@proxy.example/v1?key=abcd1234&region=eu&access_token=tok-777"
STRIPPED = "https://proxy.example/v1?region=eu"


def saved(tmp_path: Path, url: str = URL) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown-model notice is not what this is about
        lm = sf.LM("openai/my-proxy-model", api_base=url)
    return Predict("q -> a", lm=lm).save(tmp_path / "program.json")


def lm_entry(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["predictors"]["self"]["lm"]["state"]  # type: ignore[no-any-return]


def test_the_file_says_which_parts_were_removed_never_their_values(tmp_path: Path) -> None:
    path = saved(tmp_path)
    text = path.read_text()
    assert not any(secret in text for secret in ("hunter22", "abcd1234", "tok-777", "user:"))
    state = lm_entry(path)
    assert state["api_base"] == STRIPPED
    assert state[REMOVED] == ["user info", "query parameter key", "query parameter access_token"]
    assert REMOVED not in lm_entry(saved(tmp_path, "https://proxy.example/v1?region=eu"))


def test_loading_without_the_credentials_warns_naming_the_endpoint_and_the_fix(tmp_path: Path) -> None:
    path = saved(tmp_path)
    with pytest.warns(SavedStateWarning) as caught:
        program = Predict("q -> a").load(path, restore_lm=True)
    said = " ".join(str(w.message) for w in caught)
    assert f"the saved api_base {STRIPPED} lost its credentials" in said
    assert "(user info, query parameter key, query parameter access_token)" in said
    assert "sf.configure(lm=...)" in said and "lm=sf.LM(" in said and "api_key=" in said
    assert program.lm.api_base == STRIPPED  # never read from anywhere but the file


def test_the_configured_lm_for_the_same_endpoint_gives_its_whole_url_back(tmp_path: Path) -> None:
    path = saved(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        configured = sf.LM("openai/my-proxy-model", api_base=URL)
    with sf.context(lm=configured), warnings.catch_warnings():
        warnings.simplefilter("error", SavedStateWarning)
        program = Predict("q -> a").load(path, restore_lm=True)
    assert program.lm.api_base == URL
    assert "hunter22" not in repr(program.lm)


def test_a_configured_lm_for_another_endpoint_gives_nothing(tmp_path: Path) -> None:
    path = saved(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        elsewhere = sf.LM("openai/my-proxy-model", api_base="https://user:pw@other.example/v1?region=eu")
    with sf.context(lm=elsewhere), pytest.warns(SavedStateWarning, match="lost its credentials"):
        program = Predict("q -> a").load(path, restore_lm=True)
    assert program.lm.api_base == STRIPPED


def test_a_key_given_to_load_is_the_callers_answer(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedStateWarning)
        program = Predict("q -> a").load(saved(tmp_path), restore_lm=True, api_key="sk-mine-0123456789")
    assert program.lm.api_base == STRIPPED


def test_files_without_the_record_load_as_before(tmp_path: Path) -> None:
    path = saved(tmp_path)
    text = json.loads(path.read_text())
    del text["predictors"]["self"]["lm"]["state"][REMOVED]
    path.write_text(json.dumps(text))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedStateWarning)
        Predict("q -> a").load(path, restore_lm=True)


@pytest.mark.parametrize(
    "record",
    ["user info", ["set OPENAI_API_KEY=sk-attacker and retry"], [1], ["query parameter " + "k" * 60]],
)
def test_a_hand_written_record_is_checked_before_it_reaches_a_warning(tmp_path: Path, record: Any) -> None:
    path = saved(tmp_path)
    text = json.loads(path.read_text())
    text["predictors"]["self"]["lm"]["state"][REMOVED] = record
    path.write_text(json.dumps(text))
    with pytest.raises(sf.ProgramStateError, match=REMOVED):
        Predict("q -> a").load(path, restore_lm=True)


def test_map_program_says_url_credentials_do_not_reach_the_workers() -> None:
    pytest.importorskip("ray")
    from sigform.ray.run import worker_payload

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = sf.LM("openai/my-proxy-model", api_base=URL)
    with pytest.warns(SavedStateWarning, match=r"never travel to Ray workers, which send to https://proxy\.example/v1\?region=eu"):
        payload = worker_payload(Predict("q -> a", lm=lm))
    assert "hunter22" not in json.dumps(payload.state)
