"""What every measurement shares: result rows, medians, the DSPy virtualenv and child processes.

DSPy is measured in a separate virtualenv (``benchmarks/.venv-dspy``, created on demand with
``pip install dspy==3.4.1``) so that it never touches the environment sigform runs and is tested
in. Its side of each measurement is a script in ``benchmarks/dspy_side/`` run with that venv's
python; the script prints one JSON object as its last line of output.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DSPY_SIDE = HERE / "dspy_side"
DSPY_VERSION = "3.4.1"
DEFAULT_VENV = HERE / ".venv-dspy"

# Both sides run offline: no model-price map download (litellm and DSPy's metadata loader both
# honour this variable), no telemetry. Applied to every child process, sigform's included.
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "DSP_CACHEBOOL": "false",
    "TOKENIZERS_PARALLELISM": "false",
}


@dataclass
class Row:
    """One line of the comparison table.

    ``ratio`` is how many times better sigform is (``higher_is_better`` decides the direction:
    for times it is DSPy / sigform). ``ratio`` may also compare sigform with a reference
    (a floor or an ideal) -- ``ratio_desc`` says which.
    """

    section: str
    metric: str
    unit: str
    sigform: float | None
    dspy: float | None = None
    ratio: float | None = None
    ratio_desc: str = "DSPy / sigform"
    target: str = ""
    met: bool | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Section:
    """The rows of one measurement plus free-form details (request shapes, profiles, ...)."""

    name: str
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def speedup(sigform: float | None, dspy: float | None) -> float | None:
    """DSPy time / sigform time (how many times faster sigform is)."""
    if sigform is None or dspy is None or sigform <= 0:
        return None
    return dspy / sigform


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """Median over rounds of ``numerators[i] / denominators[i]`` (rounds measured back to back,
    so each pair saw the same machine load); None when either side is missing."""
    pairs = [n / d for n, d in zip(numerators, denominators, strict=False) if d > 0]
    return median(pairs) if pairs and len(numerators) == len(denominators) else None


def time_calls(fn: Callable[[], Any], calls: int, repeats: int) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` rounds of ``calls`` calls (one warm-up)."""
    fn()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls)
    return median(rounds)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **OFFLINE_ENV}
    env.pop("PYTHONPATH", None)  # the DSPy venv must not see sigform's environment
    # fresh-process figures are for an installed package, which has its bytecode cached: let the
    # warm-up runs write .pyc files for both sides (some machines set this variable globally)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


def venv_dir() -> Path:
    return Path(os.environ.get("SIGFORM_BENCH_DSPY_VENV", DEFAULT_VENV))


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def dspy_available() -> bool:
    python = venv_python()
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, numpy; print(m.version('dspy'))"],
        capture_output=True, text=True, env=child_env(),
    )
    return probe.returncode == 0 and probe.stdout.strip() == DSPY_VERSION


def ensure_dspy_venv(log: Callable[[str], None] = print) -> Path:
    """The DSPy venv's python, creating the venv and installing dspy==3.4.1 (and numpy, for its
    KNNFewShot) on first use."""
    if dspy_available():
        return venv_python()
    target = venv_dir()
    log(f"creating {target} with dspy=={DSPY_VERSION} (first run only; takes a minute or two)")
    if not venv_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    # numpy: DSPy's KNNFewShot needs it (a lazy import) but DSPy does not depend on it
    subprocess.run(
        [str(venv_python()), "-m", "pip", "install", "--quiet", f"dspy=={DSPY_VERSION}", "numpy"], check=True
    )
    if not dspy_available():
        raise RuntimeError(f"dspy=={DSPY_VERSION} could not be installed into {target}")
    return venv_python()


def _last_json(out: str, what: str, err: str) -> Any:
    for line in reversed(out.strip().splitlines()):
        if line.startswith(("{", "[")):
            return json.loads(line)
    raise RuntimeError(
        f"{what} printed no JSON result.\nstdout tail: {out[-1500:]}\nstderr tail: {err[-3000:]}"
    )


def run_json(cmd: Sequence[str], *, stdin: str | None = None, timeout: float = 900, cwd: Path | None = None,
             env: dict[str, str] | None = None) -> Any:
    """Run a child process and return the JSON object on its last JSON line of output."""
    proc = subprocess.run(
        list(cmd), input=stdin, capture_output=True, text=True, timeout=timeout, cwd=cwd,
        env=env if env is not None else child_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[1:3]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return _last_json(proc.stdout, " ".join(cmd[1:3]), proc.stderr)


def run_dspy(script: str, *args: str, stdin: str | None = None, timeout: float = 900) -> Any:
    """Run ``benchmarks/dspy_side/<script>`` with the DSPy venv's python; its JSON result."""
    return run_json([str(venv_python()), str(DSPY_SIDE / script), *args], stdin=stdin, timeout=timeout,
                    cwd=DSPY_SIDE)


def run_sigform(module: str, *args: str, stdin: str | None = None, timeout: float = 900) -> Any:
    """Run ``python -m benchmarks.<module>`` in a fresh process of this interpreter; its JSON result."""
    env = child_env({"PYTHONPATH": str(ROOT)})
    return run_json([sys.executable, "-m", f"benchmarks.{module}", *args], stdin=stdin, timeout=timeout,
                    cwd=ROOT, env=env)


def profile_top(fn: Callable[[], Any], calls: int = 200, top: int = 18, sort: str = "cumulative") -> str:
    """The top cumulative entries of a cProfile of ``calls`` calls of ``fn`` (for slow paths)."""
    import cProfile
    import io
    import pstats

    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(top)
    text = out.getvalue()
    start = text.find("   ncalls")
    return text[start:].rstrip() if start >= 0 else text.rstrip()
