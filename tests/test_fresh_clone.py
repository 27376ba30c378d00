"""The README's test command passes on a clone with nothing beside it (issue 17, item 4): the
tests that need the shared parse corpus skip there, saying why, and nothing else depends on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# every test that touches the corpus or ../shared, directly or through the benchmarks
CORPUS_TESTS = [
    "tests/test_benchmarks_smoke.py",
    "tests/adapters/test_parse_corpus.py",
    "tests/types/test_coercion_corpus.py",
    "tests/adapters/test_heldout_cases.py",
    "tests/adapters/test_heldout_fuzz.py",
]


def test_corpus_tests_skip_cleanly_on_a_lone_clone(tmp_path: Path) -> None:
    clone = tmp_path / "alone" / "sigform"  # no ../shared beside it
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", ".ruff_cache", ".benchmarks", "results")
    for name in ("sigform", "tests", "benchmarks"):
        shutil.copytree(ROOT / name, clone / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", clone / "pyproject.toml")
    assert not (clone.parent / "shared").exists()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *CORPUS_TESTS],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "the shared parse corpus is not beside this clone" in done.stdout
    assert "failed" not in done.stdout.splitlines()[-1]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    blocks = [block.strip() for block in section.split("```bash")[1:]]
    commands = [block.split("```", 1)[0].strip() for block in blocks]
    (test_command,) = [command for command in commands if "pytest" in command]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines
    # a new virtualenv: the run sees what a fresh machine resolves, not what this one kept
    assert test_command.startswith("python -m venv .venv && .venv/bin/")
