"""Every notebook in notebooks/ runs top to bottom without an error (nbclient, kernel python3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def kernel() -> str:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        subprocess.run(
            [sys.executable, "-m", "ipykernel", "install", "--user"], check=True, capture_output=True
        )
    return "python3"


def test_there_is_a_quickstart() -> None:
    assert any(p.name == "01_quickstart.ipynb" for p in NOTEBOOKS)
    assert any(p.name == "02_testing_offline.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("SIGFORM_CACHE_DIR", str(tmp_path / "cache"))
    # the kernel imports this checkout's sigform, not whichever copy pip installed
    paths = (str(REPO), os.environ.get("PYTHONPATH"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.delenv("CI", raising=False)  # the kernel decides on the progress bar as a user's would
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, kernel_name=kernel, timeout=300, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError with the failing cell and its traceback
    errors = [
        out
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code_cells)  # every cell ran
    for cell in code_cells:
        if ".batch(" in cell.source and "progress=False" not in cell.source:
            _assert_finished_bar(cell)


def _assert_finished_bar(cell: dict) -> None:
    """A batch in a fresh kernel (no ipywidgets needed) shows a progress bar, redrawn in place to
    its final count."""
    import re

    pages = [out.get("data", {}).get("text/html", "") for out in cell.get("outputs", [])]
    bars = [page for page in pages if "<progress" in page]
    assert len(bars) == 1, cell.source[:80]
    done, total = map(int, re.search(r"</progress> (\d+)/(\d+)", bars[0]).groups())
    assert done == total > 0
