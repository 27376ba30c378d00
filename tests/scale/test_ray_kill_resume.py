"""A ``map_program`` run on Ray, killed at a random point and resumed from its checkpoint folder.

The run is a child process with its own local Ray instance (2 CPUs); the test SIGKILLs that
driver once some rows are durably recorded, checks that the killed instance goes away, and runs
the same script again in a fresh process. Ray processes that outlive the kill are killed by the
fixture (by pid, within the child's session) and must all be gone when the test ends.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_program import ROOT, TESTS, report_program, report_reply, x_of

from sigform.testing.providers import OpenAIChatFake, RecordedRequest, Reply

pytestmark = pytest.mark.filterwarnings("error::ray.util.annotations.RayDeprecationWarning")

_RUN = textwrap.dedent(
    """
    import json, os, sys
    sys.path[:0] = [{root!r}, {tests!r}]
    import ray, ray.data
    import sigform as sf
    from report_program import Report
    from sigform.ray import map_program

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir={ray_dir!r}, runtime_env={{"env_vars": {{"PYTHONPATH": {paths!r}}}}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    lm = sf.LM({model!r}, api_base={api_base!r}, api_key="sk-report", cache=False, num_retries=0)
    program = sf.Predict(Report, lm=lm, adapter=sf.ChatAdapter())
    rows = [{{"id": i, "x": i}} for i in range({n})]
    out = map_program(ray.data.from_items(rows), program, checkpoint={checkpoint!r}, batch_size=4,
                      calls_per_worker=4).take_all()
    with open({result!r}, "w") as f:
        json.dump(out, f)
    """
)

# Ray's two agents notice the raylet's death on their own schedule (the runtime-env agent a minute
# later); everything else of the instance must go with the killed driver
_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def _session(sid: int) -> dict[int, str]:
    """pid -> command line of every process in session ``sid`` (the child and all it started)."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp, session
            if int(fields[3]) == sid and fields[0] != "Z":
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(entry.name)] = command.decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return found


def _core(sid: int) -> dict[int, str]:
    return {pid: cmd for pid, cmd in _session(sid).items() if not cmd.startswith(_AGENTS)}


def _wait(condition: Any, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.fixture
def ray_children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children started in sessions of their own; whatever of them is left is killed after the test,
    and nothing may remain."""
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()
        for pid in _session(child.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    left = {child.pid: _session(child.pid) for child in children}
    assert _wait(lambda: not any(_session(pid) for pid in left), 30), left


@pytest.mark.parametrize("seed", [random.randrange(10**6)])
def test_a_killed_ray_run_resumes_with_exactly_one_result_per_row(
    ray_children: list[subprocess.Popen[bytes]], tmp_path: Path, seed: int
) -> None:
    from sigform.ray.columns import column_plan

    n = 48
    kill_after = random.Random(seed).randrange(2, n - 8)  # rows recorded before SIGKILL
    checkpoint = tmp_path / "finished"
    ray_dir = tempfile.mkdtemp(prefix="sfray-", dir="/tmp")  # short: Ray's socket paths must fit
    # Ray's workers outlive their killed driver for a second or so (until they notice the raylet
    # is gone) and would finish more rows, on a busy machine all of them. From the kill on, the
    # fake answers none of the killed run's requests: they stay in flight until its workers die
    killed, resumed = threading.Event(), threading.Event()

    async def answer(request: RecordedRequest) -> Reply:
        killed_run = not resumed.is_set()
        await asyncio.sleep(0.2)
        if killed_run and killed.is_set():
            await asyncio.Event().wait()  # never answered (cancelled when the fake stops)
        return report_reply(request)

    try:
        with OpenAIChatFake(responder=answer) as fake:

            def start(result: Path) -> subprocess.Popen[bytes]:
                script = _RUN.format(
                    root=str(ROOT), tests=str(TESTS), paths=os.pathsep.join([str(ROOT), str(TESTS)]),
                    ray_dir=ray_dir, model=fake.model("gpt-4o-mini"), api_base=fake.api_base, n=n,
                    checkpoint=str(checkpoint), result=str(result),
                )
                child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, start_new_session=True,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                ray_children.append(child)
                return child

            def recorded() -> list[dict[str, Any]]:
                parts = [part.read_bytes().splitlines()[1:] for part in checkpoint.glob("*.jsonl")]
                lines = [line for part in parts for line in part]
                return [json.loads(line) for line in lines if line.endswith(b"}")]

            first = start(tmp_path / "first.json")
            assert _wait(lambda: len(recorded()) >= kill_after or first.poll() is not None, 300)
            assert first.poll() is None, f"the run ended before the kill: {first.stderr.read()[-2000:]!r}"  # type: ignore[union-attr]
            killed.set()
            first.send_signal(signal.SIGKILL)
            first.wait()
            # the raylet, GCS and workers die with their driver (Ray's fate sharing); rows in flight
            # may still be recorded until the workers are gone, so the count is taken after that
            assert _wait(lambda: not _core(first.pid), 60), _core(first.pid)
            finished_before = {r["key"]: r["output"]["box"]["width"] for r in recorded()}
            asked_before = collections.Counter(x_of(r) for r in fake.requests)

            resumed.set()
            second = start(tmp_path / "second.json")
            assert second.wait(timeout=300) == 0, second.stderr.read()[-3000:]  # type: ignore[union-attr]
            asked = collections.Counter(x_of(r) for r in fake.requests)
            fake.check()
        with OpenAIChatFake(responder=report_reply) as fake:  # the single-process reference
            program = report_program(fake)
            expected = program.batch([{"x": i} for i in range(n)], progress=False)
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)

    note = f"seed {seed}: killed after {kill_after} rows, {len(finished_before)} recorded when Ray was gone"
    # a run cut short: rows were left unfinished (its workers may still have *sent* every row in
    # the second they outlive the driver - the fake records those requests and answers none)
    assert kill_after <= len(finished_before) < n, note
    out = sorted(json.loads((tmp_path / "second.json").read_text()), key=lambda row: row["id"])
    assert [row["id"] for row in out] == list(range(n)), note  # exactly one result per input row
    plan = column_plan(program, None, "error")
    for row, want in zip(out, expected, strict=True):
        cells = {name: plan.columns([want], [None])[name][0].as_py() for name in plan.types}
        assert {name: row[name] for name in plan.types} == cells, note
        assert row["error"] is None, note
    records = recorded()
    assert len(records) == n and len({r["key"] for r in records}) == n, note  # one record per row
    # a row recorded before the kill was never asked again; only rows in flight at the kill (sent,
    # not answered or not yet recorded) were asked twice, once by each run
    assert all(asked[x] == 1 for x in finished_before.values()), (note, asked)
    repeated = {x for x, count in asked.items() if count > 1}
    assert repeated <= set(asked_before) - set(finished_before.values()), (note, repeated)
    assert all(count <= 2 for count in asked.values()) and set(asked) == set(range(n)), (note, asked)
