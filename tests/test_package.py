"""Package-level promises: fast, light import; public names; typing marker; lint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout.strip()


def test_import_does_not_import_litellm_or_openai():
    code = "import sys, sigform; print(sorted(m for m in ('litellm', 'openai', 'httpx') if m in sys.modules))"
    assert _fresh(code) == "[]"


def test_building_a_signature_does_not_import_litellm():
    code = (
        "import sys, sigform as sf\n"
        "sig = sf.make_signature('question -> answer: int')\n"
        "print('litellm' in sys.modules)"
    )
    assert _fresh(code) == "False"


def test_every_exported_name_resolves():
    import sigform

    missing = []
    for name in sigform.__all__:
        try:
            getattr(sigform, name)
        except AttributeError:
            missing.append(name)
    assert missing == []


def test_unknown_attribute_is_an_attribute_error():
    import sigform

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sigform.nope  # noqa: B018


def test_py_typed_marker_ships():
    assert (ROOT / "sigform" / "py.typed").is_file()


def test_ruff_clean():
    result = subprocess.run(
        [
            *(sys.executable, "-m", "ruff"),  # the environment's own ruff, pinned in the dev extra
            *("check", "--output-format", "concise"),
            *("sigform", "tests", "benchmarks"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_subpackages_are_reachable_as_attributes_lazily():
    code = (
        "import sys, sigform as sf\n"
        "before = 'sigform.local' in sys.modules\n"
        "print(before, sf.local.MODEL_NAME, callable(sf.hooks.register), 'litellm' in sys.modules)"
    )
    assert _fresh(code) == "False gemma-3-270m True False"


def test_every_warning_class_sigform_defines_is_public() -> None:
    # users filter warnings by class (warnings.filterwarnings("ignore", category=sf.X)); a class
    # reachable only through an internal module path is one they cannot name safely
    code = (
        "import importlib, inspect, pkgutil, sigform as sf\n"
        "found = set()\n"
        "for info in pkgutil.walk_packages(sf.__path__, 'sigform.'):\n"
        "    if info.name.startswith(('sigform.ray', 'sigform.local.__main__', 'sigform.cli.__main__')):\n"
        "        continue\n"
        "    module = importlib.import_module(info.name)\n"
        "    for name, value in vars(module).items():\n"
        "        if inspect.isclass(value) and issubclass(value, Warning):\n"
        "            if value.__module__ == info.name:\n"
        "                found.add(name)\n"
        "print(sorted(n for n in found if getattr(sf, n, None) is None or n not in sf.__all__))\n"
    )
    assert _fresh(code) == "[]"
