"""Without Ray installed, importing sigform.ray says what to install (no Ray is started here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_sigform_ray_without_ray_names_the_extra_to_install() -> None:
    # sys.modules["ray"] = None makes `import ray` fail as it does where Ray is not installed
    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "try:\n"
        "    from sigform.ray import map_program\n"
        "except ModuleNotFoundError as err:\n"
        "    print(err.name, '|', err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == 'ray | sigform.ray needs Ray: pip install "sigform[ray]"'
