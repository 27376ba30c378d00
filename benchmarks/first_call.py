"""2. Time to first completed call, offline, in a fresh process, against the loopback fake.

A new interpreter imports the framework, declares ``question -> answer``, builds the LM
(``openai/gpt-4o-mini`` at the fake's ``api_base``, cache off, temperature 0) and runs one
Predict call, checking the parsed answer. Reported: the time from before the import to the
answer (measured inside the child) and the whole process from spawn to exit (measured by the
parent). Both sides run with the offline environment of ``benchmarks.common.OFFLINE_ENV``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Row, Section, child_env, median, speedup
from benchmarks.fake_server import FakeServer

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"

SIGFORM_CODE = """
import json, time
t0 = time.perf_counter()
import sigform as sf
class Small(sf.Signature):
    \"\"\"Answer the question.\"\"\"
    question: str = sf.InputField()
    answer: str = sf.OutputField()
lm = sf.LM("openai/gpt-4o-mini", api_base={api_base!r}, api_key="k", cache=False, temperature=0.0)
answer = sf.Predict(Small, lm=lm)(question="What is the capital of France?").answer
assert answer == "Paris", answer
print(json.dumps({{"s": time.perf_counter() - t0}}))
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
answer = dspy.Predict(Small)(question="What is the capital of France?").answer
assert answer == "Paris", answer
print(json.dumps({{"s": time.perf_counter() - t0}}))
"""


def _once(python: str | Path, code: str, env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd="/")
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"first-call child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["s"], wall


def run(repeats: int = 5, dspy_python: Path | None = None) -> Section:
    section = Section("first_call")
    sf_env = child_env({"PYTHONPATH": str(ROOT)})
    with FakeServer(CHAT_REPLY) as server:
        sides: list[tuple[str, str | Path, str, dict[str, str]]] = [
            ("sigform", sys.executable, SIGFORM_CODE.format(api_base=server.api_base), sf_env)
        ]
        if dspy_python is not None:
            sides.append(("dspy", Path(dspy_python).absolute(), DSPY_CODE.format(api_base=server.api_base),
                          child_env()))
        for _, python, code, env in sides:
            _once(python, code, env)  # writes .pyc files; not measured
        samples: dict[str, list[tuple[float, float]]] = {key: [] for key, *_ in sides}
        for _ in range(repeats):
            for key, python, code, env in sides:
                samples[key].append(_once(python, code, env))
        requests = server.requests()
        slow_profile = None
        in_process = median([s[0] for s in samples["sigform"]])
        if in_process >= 1.0:
            slow_profile = profile_child(SIGFORM_CODE.format(api_base=server.api_base), sf_env)
    fig = {
        k: {"in_process_ms": median([s[0] for s in v]) * 1e3, "process_ms": median([s[1] for s in v]) * 1e3}
        for k, v in samples.items()
    }
    d = fig.get("dspy", {})
    sf_ = fig["sigform"]
    section.rows.append(Row(
        "2 first call", "import -> first Predict answer (in process)", "ms", sf_["in_process_ms"],
        d.get("in_process_ms"), speedup(sf_["in_process_ms"], d.get("in_process_ms")),
        target="< 1000 ms", met=sf_["in_process_ms"] < 1000,
    ))
    section.rows.append(Row(
        "2 first call", "process spawn -> exit, one Predict call", "ms", sf_["process_ms"],
        d.get("process_ms"), speedup(sf_["process_ms"], d.get("process_ms")),
        target="< 1000 ms", met=sf_["process_ms"] < 1000,
    ))
    section.details = {"figures": fig, "repeats": repeats, "last_requests": requests[-2:]}
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
