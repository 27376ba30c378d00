"""1. Cold import: wall time and peak memory of ``import sigform`` vs ``import dspy``, fresh processes.

Each run is a new interpreter that imports the package and reports the import's wall time and
the process's peak RSS; the bare interpreter's peak RSS (same probe, no import) is subtracted.
One unmeasured run first writes any missing ``.pyc`` files, so the figures are for a fresh
process with a warm disk cache -- what a user sees on every start but the very first. Runs of
the two sides alternate so drifting machine load hits both alike.

``import sigform`` is lazy (PEP 562): the public names load on first use. The second sigform
row also touches ``Predict``, ``LM`` and ``ChatAdapter``, i.e. what a script loads before its
first call; ``import dspy`` loads its public API eagerly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.common import Row, Section, child_env, median, speedup

PROBE = (
    "import json, time\n"
    "t0 = time.perf_counter()\n"
    "{stmt}\n"
    "dt = time.perf_counter() - t0\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
    "print(json.dumps({{'s': dt, 'rss_kb': int(hwm)}}))\n"
)
STATEMENTS = {
    "sigform": "import sigform",
    "sigform_api": "import sigform\nsigform.Predict, sigform.LM, sigform.ChatAdapter",
    "dspy": "import dspy",
    "bare": "pass",
}


def probe(python: str | Path, key: str) -> dict[str, float]:
    env = child_env()
    if key.startswith("sigform"):
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [str(Path(python).absolute()), "-c", PROBE.format(stmt=STATEMENTS[key])],
        capture_output=True, text=True, check=True, env=env, cwd="/",
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(repeats: int = 7, dspy_python: Path | None = None) -> Section:
    section = Section("import")
    sides: list[tuple[str, str | Path]] = [("sigform", sys.executable), ("sigform_api", sys.executable)]
    if dspy_python is not None:
        sides.append(("dspy", dspy_python))
    samples: dict[str, list[dict[str, float]]] = {key: [] for key, _ in sides}
    bare = {str(python): [] for _, python in sides}
    for key, python in sides:
        probe(python, key)  # writes .pyc files; not measured
    for _ in range(repeats):
        for key, python in sides:
            samples[key].append(probe(python, key))
        for python in {str(p) for _, p in sides}:
            bare[python].append(probe(python, "bare")["rss_kb"])
    figures: dict[str, dict[str, float]] = {}
    for key, python in sides:
        base = median(bare[str(python)])
        figures[key] = {
            "ms": median([s["s"] for s in samples[key]]) * 1e3,
            "mb": (median([s["rss_kb"] for s in samples[key]]) - base) / 1024,
        }
    dspy = figures.get("dspy")
    labels = (("sigform", "import sigform"), ("sigform_api", "import sigform + Predict/LM/ChatAdapter"))
    for key, label in labels:
        ms = figures[key]["ms"]
        mb = figures[key]["mb"]
        is_main = key == "sigform"
        ratio = speedup(ms, dspy["ms"]) if dspy else None
        section.rows.append(Row(
            "1 import", f"{label}: wall time", "ms", ms, dspy["ms"] if dspy else None, ratio,
            target=">= 5x faster" if is_main else "", met=(ratio >= 5) if (is_main and ratio) else None,
        ))
        section.rows.append(Row(
            "1 import", f"{label}: peak RSS over bare python", "MB", mb, dspy["mb"] if dspy else None,
            speedup(mb, dspy["mb"]) if dspy else None, ratio_desc="DSPy / sigform",
        ))
    section.details = {"figures": figures, "repeats": repeats}
    return section
