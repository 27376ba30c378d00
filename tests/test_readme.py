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
