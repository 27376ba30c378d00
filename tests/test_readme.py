"""Every ```python block in README.md runs, top to bottom, each in a fresh namespace.

The README promises real, runnable examples; this keeps that promise honest. The quickstart block
runs on the embedded local model (the same server the local-model tests use).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def test_readme_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    import sigform as sf

    code = BLOCKS[index]
    with sf.context():  # keep any configure() in one block from leaking into the next
        exec(
            compile(code, f"README.md block {index}", "exec", dont_inherit=True),
            {"__name__": f"readme_{index}"},
        )
    assert capsys.readouterr().out.strip() or "print(" not in code


def test_the_resolution_order_names_the_real_default_adapter():
    from sigform.predict.predict import default_adapter

    text = README.read_text(encoding="utf-8")
    named = re.search(r"the defaults\s+\(the embedded local model, `(\w+)`\)", text)
    assert named is not None, "README lost the sentence giving the defaults' resolution order"
    assert named.group(1) == type(default_adapter()).__name__


def test_the_first_program_example_says_why_a_scripted_model_gets_json():
    # the example scripts chat sections, yet `_meta.adapter` prints JSONAdapter: a ScriptedLM
    # declares json_object by default, so the default AutoAdapter asks it for JSON
    block = next(code for code in BLOCKS if "pred._meta.adapter" in code)
    import sigform as sf

    namespace: dict[str, object] = {"__name__": "readme_programs"}
    with sf.context():
        code = compile(block.split("try:")[0], "README.md programs block", "exec", dont_inherit=True)
        exec(code, namespace)
    shown = namespace["pred"]._meta.adapter  # type: ignore[attr-defined]
    comment = next(line for line in block.splitlines() if "pred._meta.adapter" in line).split("#", 1)[1]
    assert shown in comment
