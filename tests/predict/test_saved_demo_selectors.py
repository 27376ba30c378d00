"""A saved program's demo selector is rebuilt from the kinds sigform registers, never from code
the file names (issue 16 item 5: predict.persistence does not import optimize.knn)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sigform as sf
from sigform.optimize import KNNFewShot
from sigform.predict import Example, Predict
from sigform.predict.demo_selectors import SIGFORM_KINDS, register_selector_kind, selector_loader
from sigform.testing import ScriptedLM

POOL = [
    Example(text="a red apple from the orchard", kind="fruit").with_inputs("text"),
    Example(text="the truck drove down the highway", kind="vehicle").with_inputs("text"),
]


def saved_knn(tmp_path: Path) -> Path:
    lm = ScriptedLM(["[[ ## kind ## ]]\nfruit\n\n[[ ## completed ## ]]"])
    return KNNFewShot(k=1).compile(Predict("text -> kind", lm=lm), trainset=POOL).save(tmp_path / "knn.json")


def test_a_fresh_process_loads_a_saved_knn_selector_without_importing_optimize_first(tmp_path: Path) -> None:
    path = saved_knn(tmp_path)
    code = f"""
import sys
import sigform as sf
assert "sigform.optimize.knn" not in sys.modules
plain = sf.Predict("text -> kind")
assert "sigform.optimize.knn" not in sys.modules  # a program without a selector never loads it
program = sf.Predict("text -> kind").load({str(path)!r})
selector = program.demo_selector
print(type(selector).__module__, type(selector).__name__, len(selector.pool), selector.k)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["sigform.optimize.knn", "KNNDemos", "2", "1"]


@pytest.mark.parametrize(
    "kind", ["sigform.optimize.knn:KNNDemos", "os", "builtins.eval", "KNN", "", None, 7, ["knn"]]
)
def test_a_file_naming_another_selector_kind_is_refused(tmp_path: Path, kind: object) -> None:
    saved = json.loads(saved_knn(tmp_path).read_text())
    saved["predictors"]["self"]["demo_selector"]["kind"] = kind
    program = Predict("text -> kind")
    before = set(sys.modules)
    with pytest.raises(sf.ProgramStateError, match=r"self\.demo_selector: unknown demo selector kind") as err:
        program.load_state(saved)
    assert "known kinds: 'knn'" in str(err.value)
    assert set(sys.modules) == before
    assert program.demo_selector is None  # nothing changed


def test_only_sigform_s_own_selector_kinds_can_be_registered() -> None:
    assert sorted(SIGFORM_KINDS) == ["knn"]
    with pytest.raises(ValueError, match="'pickle' is not one of sigform's own"):
        register_selector_kind("pickle", lambda state, pool, where, allow_model: None)
    with pytest.raises(sf.ProgramStateError, match="unknown demo selector kind 'pickle'"):
        selector_loader("pickle", "x")
