"""2. Time to first completed call, offline, in a fresh process, against the loopback fake.

A new interpreter imports the framework, declares ``question -> answer``, builds the LM
(``openai/gpt-4o-mini`` at the fake's ``api_base``, cache off, temperature 0) and runs one
Predict call, checking the parsed answer. Reported: the time from before the import to the
answer (measured inside the child) and the whole process from spawn to exit (measured by the
parent), side by side with DSPy 3.4.1's default (native) client. A third figure is a notebook's
first call: the LM is built in one cell, the next cell calls it ``PAUSE_S`` later; the time of
that call alone. Both sides run with the offline environment of ``benchmarks.common.OFFLINE_ENV``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Row, Section, child_env, median, paired_ratio
from benchmarks.fake_server import FakeServer

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
PAUSE_S = 3.0  # between the notebook cell that builds the LM and the one that calls it

SIGFORM_CODE = """
import json, time
t0 = time.perf_counter()
import sigform as sf
class Small(sf.Signature):
    \"\"\"Answer the question.\"\"\"
    question: str = sf.InputField()
    answer: str = sf.OutputField()
lm = sf.LM("openai/gpt-4o-mini", api_base={api_base!r}, api_key="k", cache=False, temperature=0.0)
time.sleep({pause})
t1 = time.perf_counter()
answer = sf.Predict(Small, lm=lm)(question="What is the capital of France?").answer
assert answer == "Paris", answer
print(json.dumps({{"s": time.perf_counter() - t0 - {pause}, "call": time.perf_counter() - t1}}))
"""

DSPY_CODE = """
import json, time
t0 = time.perf_counter()
import dspy
class Small(dspy.Signature):
    \"\"\"Answer the question.\"\"\"
    question: str = dspy.InputField()
    answer: str = dspy.OutputField()
lm = dspy.LM("openai/gpt-4o-mini", api_base={api_base!r}, api_key="k", cache=False, temperature=0.0)
dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
time.sleep({pause})
t1 = time.perf_counter()
answer = dspy.Predict(Small)(question="What is the capital of France?").answer
assert answer == "Paris", answer
print(json.dumps({{"s": time.perf_counter() - t0 - {pause}, "call": time.perf_counter() - t1}}))
"""


def _once(python: str | Path, code: str, env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd="/")
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"first-call child failed:\n{out.stderr[-3000:]}")
    inside = json.loads(out.stdout.strip().splitlines()[-1])
    return {"in_process_ms": inside["s"] * 1e3, "process_ms": wall * 1e3, "call_ms": inside["call"] * 1e3}


def run(repeats: int = 5, dspy_python: Path | None = None, pause: float = PAUSE_S) -> Section:
    """Fresh processes, sigform and DSPy interleaved: back to back (no pause), then a notebook's
    first call (``pause`` seconds after the LM was built); medians over ``repeats``."""
    section = Section("first_call")
    sf_env = child_env({"PYTHONPATH": str(ROOT)})
    with FakeServer(CHAT_REPLY) as server:
        sides: list[tuple[str, str | Path, str, dict[str, str]]] = [
            ("sigform", sys.executable, SIGFORM_CODE, sf_env)
        ]
        if dspy_python is not None:
            sides.append(("dspy", Path(dspy_python).absolute(), DSPY_CODE, child_env()))
        for _, python, code, env in sides:
            _once(python, code.format(api_base=server.api_base, pause=0), env)  # writes .pyc files
        samples: dict[tuple[str, float], list[dict[str, float]]] = {}
        for _ in range(repeats):
            for wait in (0.0, pause):
                for key, python, code, env in sides:
                    sample = _once(python, code.format(api_base=server.api_base, pause=wait), env)
                    samples.setdefault((key, wait), []).append(sample)
        requests = server.requests()
        slow_profile = None
        fig = {
            f"{key}{'' if not wait else f'_after_{wait:g}s'}": {
                part: median([s[part] for s in v]) for part in ("in_process_ms", "process_ms", "call_ms")
            }
            for (key, wait), v in samples.items()
        }
        if fig["sigform"]["in_process_ms"] >= 1000:
            slow_profile = profile_child(SIGFORM_CODE.format(api_base=server.api_base, pause=0), sf_env)

    def paired(part: str, wait: float) -> float | None:
        if ("dspy", wait) not in samples:
            return None
        theirs = [s[part] for s in samples[("dspy", wait)]]
        return paired_ratio(theirs, [s[part] for s in samples[("sigform", wait)]])

    mine, theirs = fig["sigform"], fig.get("dspy", {})
    ratio = paired("in_process_ms", 0.0)
    section.rows.append(Row(
        "2 first call", "import -> first Predict answer (in process; DSPy: its default native client)", "ms",
        mine["in_process_ms"], theirs.get("in_process_ms"), ratio,
        target="<= DSPy and < 1000 ms",
        met=mine["in_process_ms"] < 1000 and (ratio is None or ratio >= 1.0),
    ))
    section.rows.append(Row(
        "2 first call", "process spawn -> exit, one Predict call", "ms", mine["process_ms"],
        theirs.get("process_ms"), paired("process_ms", 0.0),
        target="< 1000 ms", met=mine["process_ms"] < 1000,
    ))
    later, later_theirs = fig[f"sigform_after_{pause:g}s"], fig.get(f"dspy_after_{pause:g}s", {})
    section.rows.append(Row(
        "2 first call", f"notebook: first call {pause:g} s after the cell that built the LM", "ms",
        later["call_ms"], later_theirs.get("call_ms"), paired("call_ms", pause),
        target="<= DSPy", met=None if not later_theirs else later["call_ms"] <= later_theirs["call_ms"],
    ))
    section.details = {"figures": fig, "repeats": repeats, "pause_s": pause, "last_requests": requests[-2:]}
    if slow_profile:
        section.details["sigform_first_call_profile"] = slow_profile
    return section


def profile_child(code: str, env: dict[str, str], top: int = 30) -> str:
    """cProfile of one fresh-process first call: the top cumulative entries."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(code)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "cProfile", "-s", "cumulative", fh.name],
            capture_output=True, text=True, env=env, cwd="/",
        )
    finally:
        os.unlink(fh.name)
    lines = out.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("ncalls")), 0)
    return "\n".join(lines[start : start + top + 1])
