"""sigform.ray: programs over Ray Data datasets, on a local Ray instance with 2 CPUs.

One Ray instance serves the whole module (starting one takes seconds); every map runs 2 worker
actors against the loopback fake provider in this process.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import ray.data as ray_data
from report_program import ROOT, TESTS, failing_reply, report_program, report_reply, x_of

import sigform as sf
from sigform.testing.providers import ErrorReply, OpenAIChatFake, RecordedRequest, Reply

WORKER_KEY_VAR = "SIGFORM_RAY_TEST_KEY"  # set only in the workers' environment
SECRET = "sk-live-driver-only-0123456789abcdef"

# map_program must keep working when Ray removes what it deprecates (its RayDeprecationWarning is a
# DeprecationWarning): every run here fails on one
pytestmark = pytest.mark.filterwarnings("error::ray.util.annotations.RayDeprecationWarning")


def test_import_sigform_does_not_import_ray() -> None:
    code = (
        "import sys, sigform as sf\n"
        "sf.Predict, sf.LM, sf.ChatAdapter\n"
        "import sigform.lm.rate_limit, sigform.predict.checkpoint\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    environ = dict(os.environ)
    # workers import sigform and report_program (the signature's field types)
    paths = os.pathsep.join([str(ROOT), str(TESTS)])
    ray.init(
        address="local",  # a new instance, never one another process started
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": paths, WORKER_KEY_VAR: SECRET}},
    )
    ray_data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()
        os.environ.clear()  # Ray must leave no setting behind for the rest of the suite
        os.environ.update(environ)


def program_for(fake: OpenAIChatFake, **kw: Any) -> sf.Predict:
    return report_program(fake, **{"api_key": SECRET, "num_retries": 0, **kw})


def rows_by_id(ds: Any) -> list[dict[str, Any]]:
    return sorted(ds.take_all(), key=lambda row: row["id"])


def test_results_equal_single_process_batch_with_typed_columns_and_an_error_column(
    ray_session: None, tmp_path: Path
) -> None:
    from sigform.ray import RunTally, map_program
    from sigform.ray.columns import column_plan

    n = 24
    items = [{"id": i, "x": i, "note": f"keep {i}"} for i in range(n)]
    with OpenAIChatFake(responder=failing_reply) as fake:
        program = program_for(fake)
        expected, failures = program.batch(
            [{"x": i} for i in range(n)], return_failures=True, progress=False
        )
        local_calls = len(fake.requests)
        tally = RunTally()
        ds = map_program(
            ray_data.from_items(items), program, concurrency=2, batch_size=5, tally=tally,
            credentials=f"env:{WORKER_KEY_VAR}",  # resolved on each worker from its environment
        )
        ds = ds.materialize()
        out = rows_by_id(ds)
        fake.check()
        ray_calls = len(fake.requests) - local_calls
    assert WORKER_KEY_VAR not in os.environ  # the driver could not have resolved the key
    assert len(out) == n and [r["id"] for r in out] == list(range(n))  # no row dropped
    assert [r["note"] for r in out] == [f"keep {i}" for i in range(n)]  # other columns pass through
    plan = column_plan(program, None, "error")
    for row, want in zip(out, expected, strict=True):
        if want is None:
            assert all(row[name] is None for name in plan.types)
            continue
        cells = {name: plan.columns([want], [None])[name][0].as_py() for name in plan.types}
        assert {name: row[name] for name in plan.types} == cells
        assert row["error"] is None
    failed = {f.index: f for f in failures}
    assert sorted(failed) == [i for i in range(n) if i % 7 == 5]
    for index, failure in failed.items():
        assert out[index]["error"]["type"] == type(failure.error).__name__ == "BadRequestError"
        assert f"x={index}" in out[index]["error"]["message"]
    # stated column types: dates as ISO text, enum value as string, model as JSON text
    schema = ds.schema()
    types = dict(zip(schema.names, schema.types, strict=True))
    assert str(types["when"]) == "string" and str(types["score"]) == "double"
    assert out[2]["when"] == "2024-01-03"
    assert str(types["color"]) == "string" and out[1]["color"] == "red"
    assert json.loads(out[3]["box"]) == {"width": 3, "label": "box 3"}
    assert ray_calls == n
    summary = tally.summary()
    assert summary["rows"] == n and summary["failed"] == len(failed)
    assert summary["prompt_tokens"] == 12 * (n - len(failed))  # the fake's usage per answered call
    assert summary["completion_tokens"] == 8 * (n - len(failed))
    # what Ray writes, Ray (and pyarrow) reads back with the same columns
    ds.write_parquet(str(tmp_path / "parquet"))
    back = sorted(ray_data.read_parquet(str(tmp_path / "parquet")).take_all(), key=lambda r: r["id"])
    assert back[2]["when"] == "2024-01-03" and back[5]["error"]["type"] == "BadRequestError"
    ds.write_json(str(tmp_path / "jsonl"))
    lines = [json.loads(line) for f in (tmp_path / "jsonl").iterdir() for line in f.read_text().splitlines()]
    assert len(lines) == n


def test_no_credential_travels_to_the_workers(ray_session: None) -> None:
    from ray import cloudpickle

    from sigform.ray import map_program
    from sigform.ray.run import worker_payload

    with OpenAIChatFake(responder=failing_reply) as fake:
        program = program_for(fake, rpm=6000)
        program(x=1)  # the literal key is now resolved and cached in the driver's LM
        for credentials in (None, f"env:{WORKER_KEY_VAR}", "cmd:printenv SIGFORM_RAY_TEST_KEY"):
            payload = worker_payload(program, credentials=credentials)
            blob = cloudpickle.dumps(payload)
            assert SECRET.encode() not in blob
            assert b"sk-live" not in blob
        with pytest.raises(TypeError, match="never the key itself"):
            map_program(ray_data.from_items([{"x": 1}]), program, credentials=SECRET)


def test_a_rate_limit_holds_across_two_workers(ray_session: None) -> None:
    from sigform.ray import map_program
    from sigform.testing.rates import max_in_window

    n = 60
    with OpenAIChatFake(responder=failing_reply, latency=0.02) as fake:
        program = program_for(fake, rpm=1800)  # 30 requests per second for the two workers together
        out = map_program(
            ray_data.from_items([{"id": i, "x": i} for i in range(n)]), program,
            concurrency=2, batch_size=10, calls_per_worker=16,
        ).take_all()
        arrivals = [r.received for r in fake.requests]
    assert len(out) == n and len(arrivals) == n
    # a bucket per worker would let ~60 a second through; the shared one 30. A worker stalled by a
    # busy machine between its slot and the send bunches a few requests, so windows get a margin.
    # Every request counts, each worker's first one too (its SDK client is made before its slot)
    arrivals.sort()
    shown = [round(t - arrivals[0], 3) for t in arrivals]
    assert (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) <= 30 * 1.05, shown
    assert max_in_window(arrivals, 2.0) <= 60 + 4, shown


def test_a_429_seen_by_one_worker_pauses_every_worker(ray_session: None) -> None:
    from sigform.ray import map_program

    # 100 requests a second for both workers; 8 calls in flight at 50 ms could do 160: the limit
    # paces the run, so without a shared pause the workers would send ~100 a second all along
    n, pause, latency = 300, 2.5, 0.05
    answered: list[RecordedRequest] = []

    def once_429(request: RecordedRequest) -> Reply | ErrorReply:
        answered.append(request)
        if len(answered) == 12:  # both workers are busy by then
            return ErrorReply(429, retry_after=pause)
        return report_reply(request)

    with OpenAIChatFake(responder=once_429, latency=latency) as fake:
        program = program_for(fake, rpm=6000, num_retries=1)
        out = rows_by_id(map_program(
            ray_data.from_items([{"id": i, "x": i} for i in range(n)]), program,
            concurrency=2, batch_size=10, calls_per_worker=4,
        ))
        fake.check()
        arrivals = sorted(r.received for r in fake.requests)
    assert len(out) == n and all(row["error"] is None for row in out)  # the 429's row was retried
    assert len(arrivals) == n + 1
    # The 429 left the server `latency` after its request arrived. Requests whose slot was booked
    # before the worker's report reached the shared limit still go (8 calls in flight at 10 ms
    # spacing, plus the report's trip to the limit's actor on a busy machine): 0.8 s is allowed for
    # those. After that no worker sends until the Retry-After has passed.
    sent = answered[11].received + latency
    shown = [round(t - sent, 3) for t in arrivals]
    assert not [t for t in arrivals if sent + 0.8 <= t < sent + pause - 0.05], shown
    assert len([t for t in arrivals if t >= sent + pause - 0.05]) >= n // 2, shown  # rows were left to send


def test_a_rerun_with_the_checkpoint_takes_finished_rows_from_it(ray_session: None, tmp_path: Path) -> None:
    from sigform.predict.checkpoint import CheckpointError
    from sigform.ray import RunTally, map_program

    directory = tmp_path / "finished"
    with OpenAIChatFake(responder=failing_reply) as fake:
        program = program_for(fake)
        first = map_program(
            ray_data.from_items([{"id": i, "x": i} for i in range(10)]), program, checkpoint=directory,
            batch_size=4,
        ).take_all()
        tally = RunTally()
        second = rows_by_id(map_program(
            ray_data.from_items([{"id": i, "x": i} for i in range(16)]), program, checkpoint=directory,
            batch_size=4, tally=tally,
        ))
        asked = collections.Counter(x_of(r) for r in fake.requests)
        with pytest.raises(CheckpointError, match="another program state"):
            map_program(ray_data.from_items([{"x": 1}]), program_for(fake, temperature=0.3),
                        checkpoint=directory)
    assert len(first) == 10 and len(second) == 16
    # finished rows were not asked again; failed rows (x % 7 == 5) were
    assert all(asked[x] == 1 for x in range(16) if x % 7 != 5), asked
    assert asked[5] == 2 and asked[12] == 1
    assert [r["box"] is not None for r in second] == [x % 7 != 5 for x in range(16)]
    by_key = {r["sigform_key"]: r for r in first}
    assert all(by_key[r["sigform_key"]]["when"] == r["when"] for r in second if r["sigform_key"] in by_key)
    assert tally.summary()["resumed"] == 9  # rows 0-9 but the failed 5


def test_a_program_with_a_signature_made_at_run_time_travels_to_a_worker() -> None:
    import pickle

    from sigform.ray.worker import pack_program

    program = sf.Predict("question: str, when: datetime.date -> answer: Literal['yes', 'no']",
                         adapter=sf.JSONAdapter())
    program.demos = [sf.Example(question="q", when=datetime.date(2024, 1, 1), answer="yes")]
    again = pickle.loads(pack_program(program))
    assert again.signature == program.signature and again.signature is not program.signature
    assert again.demos[0].when == datetime.date(2024, 1, 1)
    inputs = {"question": "Is it?", "when": datetime.date(2024, 2, 2)}
    assert again.adapter.format(again.signature, again.demos, inputs) == program.adapter.format(
        program.signature, program.demos, inputs
    )


def test_the_url_credentials_warning_never_resolves_a_command_api_base(tmp_path: Path) -> None:
    # deciding whether to warn that URL credentials stay behind ran a cmd: api_base on the driver
    from sigform.ray.run import _warn_url_credentials_stay

    marker = tmp_path / "ran"
    command_lm = sf.LM("openai/m", api_base=f"cmd:touch {marker} && echo http://127.0.0.1:9/v1", cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_url_credentials_stay("self", command_lm)
    assert not marker.exists()
    literal_lm = sf.LM("openai/m", api_base="http://user:pw@127.0.0.1:9/v1", cache=False)
    with pytest.warns(sf.SavedStateWarning, match="never travel to Ray workers") as seen:
        _warn_url_credentials_stay("self", literal_lm)
    assert "pw" not in str(seen[0].message)
