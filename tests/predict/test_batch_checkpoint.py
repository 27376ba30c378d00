"""Resumable batches: ``program.batch(..., checkpoint=path)`` records finished rows and skips them."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from report_program import ROOT, TESTS, Box, Color, expected, report_program, report_reply, x_of

import sigform as sf
from sigform.predict.checkpoint import CheckpointError, CheckpointWarning
from sigform.testing.providers import ErrorReply, OpenAIChatFake


def program_for(fake: OpenAIChatFake, **kw: Any) -> sf.Predict:
    return report_program(fake, api_key="sk-ck", **kw)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_a_rerun_skips_finished_rows_and_restores_typed_values(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program = program_for(fake)

        def run(n: int) -> list[Any]:
            examples = [{"x": i} for i in range(n)]
            if mode == "threads":
                return program.batch(examples, checkpoint=path, progress=False, num_threads=4)
            return asyncio.run(program.abatch(examples, checkpoint=path, progress=False, concurrency=4))

        first = run(5)
        second = run(9)
        fake.check()
        asked = collections.Counter(x_of(r) for r in fake.requests)
    assert asked == {i: 1 for i in range(9)}  # the first 5 were not asked again
    assert [p.to_dict() for p in second] == [expected(i) for i in range(9)]
    assert [p.to_dict() for p in first] == [p.to_dict() for p in second[:5]]
    assert isinstance(second[0].box, Box) and second[0].color is Color.BLUE
    assert len(rows(path)) == 9


def test_failed_rows_are_not_recorded_and_run_again(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program = program_for(fake, num_retries=0)
        fake.responder = lambda r: ErrorReply(400, "bad") if x_of(r) == 2 else report_reply(r)
        first, failures = program.batch(
            [{"x": i} for i in range(4)], checkpoint=path, progress=False, return_failures=True
        )
        fake.responder = report_reply
        second = program.batch([{"x": i} for i in range(4)], checkpoint=path, progress=False)
        asked = collections.Counter(x_of(r) for r in fake.requests)
    assert first[2] is None and [f.index for f in failures] == [2]
    assert second[2].to_dict() == expected(2)
    assert asked == {0: 1, 1: 1, 2: 2, 3: 1}


def test_duplicate_inputs_each_get_their_result(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program = program_for(fake)
        program.batch([{"x": 1}], checkpoint=path, progress=False)
        out = program.batch([{"x": 1}, {"x": 1}, {"x": 3}], checkpoint=path, progress=False)
    assert [p.box.width for p in out] == [1, 1, 3]
    assert sorted(r["output"]["box"]["width"] for r in rows(path)) == [1, 3]


# -- the file is untrusted ---------------------------------------------------------------------


def test_a_file_from_another_program_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program_for(fake).batch([{"x": 1}], checkpoint=path, progress=False)
        before = path.read_bytes()
        with pytest.raises(CheckpointError, match="another program state"):
            program_for(fake, temperature=0.7).batch([{"x": 1}], checkpoint=path, progress=False)
        demos = program_for(fake)
        demos.demos = [sf.Example(x=5, **expected(5)).with_inputs("x")]
        with pytest.raises(CheckpointError, match="another program state"):
            demos.batch([{"x": 1}], checkpoint=path, progress=False)
    assert path.read_bytes() == before  # nothing appended to a file that is not ours


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hello world\n", "not a sigform checkpoint"),
        (b'{"format": "something.else"}\n', "not a sigform checkpoint"),
        (b"", None),  # an empty file is a new checkpoint
        (b'{"format": "sigform.checkpoint", "version": 99, "program": "x"}\n', "version 99"),
        (b"\x80\x81 not utf8\n", "not a sigform checkpoint"),
    ],
)
def test_foreign_files_get_a_clear_error(tmp_path: Path, content: bytes, message: str | None) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    with OpenAIChatFake(responder=report_reply) as fake:
        program = program_for(fake)
        if message is None:
            assert program.batch([{"x": 1}], checkpoint=path, progress=False)[0].kind == "odd"
        else:
            with pytest.raises(CheckpointError, match=message):
                program.batch([{"x": 1}], checkpoint=path, progress=False)
            assert fake.requests == []


def test_a_folder_as_checkpoint_names_the_file_to_give_instead(tmp_path: Path) -> None:
    # checkpoint="finished/" is map_program's form; batch() got a bare IsADirectoryError
    folder = tmp_path / "finished"
    folder.mkdir()
    with OpenAIChatFake(responder=report_reply) as fake:
        with pytest.raises(CheckpointError, match=r"is a folder; batch\(\) takes a checkpoint file"):
            program_for(fake).batch([{"x": 1}], checkpoint=folder, progress=False)
        assert fake.requests == []
    assert list(folder.iterdir()) == []


def _output(row: bytes) -> dict[str, Any]:
    return dict(json.loads(row)["output"])


def _with(row: bytes, **entry: Any) -> bytes:
    """``row`` with its key kept and its body replaced by ``entry``."""
    return json.dumps({"key": json.loads(row)["key"], **entry}).encode() + b"\n"


def _written(fake: OpenAIChatFake, tmp_path: Path) -> tuple[Path, list[bytes]]:
    path = tmp_path / "run.jsonl"
    program_for(fake).batch([{"x": 1}, {"x": 2}], checkpoint=path, progress=False)
    return path, path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda row: b"{not json\n", "line 2: not JSON"),
        (lambda row: b'{"key": "../../etc", "output": {}}\n', "line 2: a row needs a 'key'"),
        (lambda row: row.replace(b'"output"', b'"outputs"'), "line 2: a row needs an 'output'"),
        (lambda row: row.replace(b'"2024-01-02"', b'"next tuesday"'), "field 'when' does not fit"),
        (lambda row: row.replace(b'"width":1', b'"width":{"__class__":"os.system"}'), "field 'box'"),
        # a Predict's rows hold exactly its outputs: not a plain value, no missing or extra field
        (lambda row: _with(row, value="not a prediction"), "line 2: a row needs an 'output'"),
        (lambda row: _with(row, output={}), r"line 2: the row's fields \[\] are not the program's outputs"),
        (lambda row: _with(row, output={**_output(row), "extra": "injected"}), "not the program's outputs"),
    ],
)
def test_a_damaged_row_is_an_error_naming_the_line(tmp_path: Path, damage: Any, message: str) -> None:
    with OpenAIChatFake(responder=report_reply) as fake:
        path, lines = _written(fake, tmp_path)
        row = next(line for line in lines[1:] if b'"width":1' in line)
        others = [line for line in lines[1:] if line is not row]
        path.write_bytes(lines[0] + damage(row) + b"".join(others))  # the damaged row is line 2
        with pytest.raises(CheckpointError, match=message):
            program_for(fake).batch([{"x": 1}], checkpoint=path, progress=False)


def test_an_unfinished_last_line_is_dropped_and_run_again(tmp_path: Path) -> None:
    with OpenAIChatFake(responder=report_reply) as fake:
        path, lines = _written(fake, tmp_path)
        path.write_bytes(b"".join(lines[:-1]) + lines[-1][:25])  # the kill cut the last write
        with pytest.warns(CheckpointWarning, match="line 3: the last row was cut off"):
            out = program_for(fake).batch([{"x": 1}, {"x": 2}], checkpoint=path, progress=False)
        assert len(fake.requests) == 3
    assert [p.box.width for p in out] == [1, 2]
    assert len(rows(path)) == 2  # every line complete again


def test_a_result_that_would_not_read_back_equal_is_not_recorded(tmp_path: Path) -> None:
    class Tagged(sf.Module):
        def __init__(self, inner: sf.Predict) -> None:
            self.inner = inner

        def forward(self, x: int) -> sf.Prediction:
            return sf.Prediction(kind=self.inner(x=x).kind, tags={x, x + 1})  # a set: no JSON type

    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program = Tagged(program_for(fake))
        for _ in range(2):
            with pytest.warns(CheckpointWarning, match="tags cannot be stored"):
                program.batch([{"x": 1}], checkpoint=path, progress=False)
        assert len(fake.requests) == 2  # not skipped: it could not come back as it was
    assert rows(path) == []


def test_unjsonable_inputs_are_a_clear_error(tmp_path: Path) -> None:
    with OpenAIChatFake(responder=report_reply) as fake, pytest.raises(CheckpointError, match="inputs"):
        program_for(fake).batch([{"x": object()}], checkpoint=tmp_path / "r.jsonl", progress=False)


# -- killed for real ---------------------------------------------------------------------------

_RUNNER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from report_program import Report
    import sigform as sf

    lm = sf.LM({model!r}, api_base={api_base!r}, api_key="sk-ck", cache=False)
    program = sf.Predict(Report, lm=lm, adapter=sf.ChatAdapter())
    program.batch([{{"x": i}} for i in range({n})], checkpoint={path!r}, num_threads=4, progress=False)
    print("finished", flush=True)
    """
)


@pytest.mark.parametrize("seed", [random.randrange(10**6) for _ in range(2)])
def test_killed_at_a_random_point_and_resumed_gives_one_result_per_row(tmp_path: Path, seed: int) -> None:
    n = 40
    kill_after = random.Random(seed).randrange(2, n - 8)  # finished rows before SIGKILL
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply, latency=0.03) as fake:
        script = _RUNNER.format(
            root=str(ROOT), tests=str(TESTS), model=fake.model("gpt-4o-mini"),
            api_base=fake.api_base, n=n, path=str(path),
        )
        child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while (not path.exists() or len(path.read_bytes().splitlines()) - 1 < kill_after) and (
            child.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        finished_before = {r["key"] for r in rows(path)}
        asked_before = collections.Counter(x_of(r) for r in fake.requests)

        results = program_for(fake).batch([{"x": i} for i in range(n)], checkpoint=path, progress=False)
        fake.check()
        asked = collections.Counter(x_of(r) for r in fake.requests)
    note = f"seed {seed}: killed after {len(finished_before)} finished rows"
    assert len(finished_before) >= kill_after, note
    assert [p.to_dict() for p in results] == [expected(i) for i in range(n)], note
    recorded = rows(path)
    assert len(recorded) == n and len({r["key"] for r in recorded}) == n, note  # one per input row
    # a row finished before the kill was asked exactly once over both runs
    done_xs = {r["output"]["box"]["width"] for r in recorded if r["key"] in finished_before}
    assert len(done_xs) == len(finished_before), note
    assert all(asked[x] == 1 for x in done_xs), (note, {x: asked[x] for x in done_xs})
    assert all(asked_before[x] == 1 for x in done_xs), note


# -- one writer at a time (issue 27, finding 4) -------------------------------------------------


def test_a_second_run_on_a_checkpoint_in_use_is_refused_and_nothing_is_lost(tmp_path: Path) -> None:
    # Two processes on one resumed checkpoint: the resumer rewrote the file at fixed offsets
    # over the other's appends, leaving non-JSON lines (and 59 lost rows). Now the second run is
    # refused at once, naming the file and the process that holds it.
    n = 40
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply, latency=0.25) as fake:
        program_for(fake).batch([{"x": i} for i in range(10)], checkpoint=path, progress=False)
        script = _RUNNER.format(
            root=str(ROOT), tests=str(TESTS), model=fake.model("gpt-4o-mini"),
            api_base=fake.api_base, n=n, path=str(path),
        )
        child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while len(path.read_bytes().splitlines()) - 1 < 12 and child.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            asked = len(fake.requests)
            with pytest.raises(CheckpointError) as refused:
                program_for(fake).batch([{"x": i} for i in range(n)], checkpoint=path, progress=False)
            still_running = child.poll() is None
        finally:
            out, _ = child.communicate(timeout=120)
        assert still_running and child.returncode == 0 and b"finished" in out
        message = str(refused.value)
        assert str(path) in message and f"process {child.pid}" in message, message
        assert "another run is writing this checkpoint" in message
        recorded = rows(path)  # every line is JSON
        assert sorted(r["output"]["box"]["width"] for r in recorded) == list(range(n))
        before = len(fake.requests)
        again = program_for(fake).batch([{"x": i} for i in range(n)], checkpoint=path, progress=False)
        assert len(fake.requests) == before  # nothing lost: every row came back from the file
        assert asked <= before
    assert [p.to_dict() for p in again] == [expected(i) for i in range(n)]


def test_the_lock_is_released_when_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        for stop in (2, 4):
            program_for(fake).batch([{"x": i} for i in range(stop)], checkpoint=path, progress=False)
        assert len(fake.requests) == 4
    assert len(rows(path)) == 4


def test_a_damaged_last_line_is_dropped_with_a_warning_keeping_the_rows_before_it(tmp_path: Path) -> None:
    # A crash (a lost disk write) can end the last line without its JSON: every recorded row was
    # refused ("line 4: not JSON"); now only that row runs again.
    with OpenAIChatFake(responder=report_reply) as fake:
        path = tmp_path / "run.jsonl"
        program_for(fake).batch([{"x": i} for i in range(3)], checkpoint=path, progress=False)
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]) + lines[-1][:30] + b"\n")
        torn = r"line 4: the last row was cut off .* \(2 recorded rows kept\)"
        with pytest.warns(CheckpointWarning, match=torn):
            out = program_for(fake).batch([{"x": i} for i in range(3)], checkpoint=path, progress=False)
        assert len(fake.requests) == 4
    assert [p.to_dict() for p in out] == [expected(i) for i in range(3)]
    assert len(rows(path)) == 3  # the damaged line is gone, its row written again


_FIFO_RUNNER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from report_program import Report
    import sigform as sf
    from sigform.testing import ScriptedLM
    from sigform.predict.checkpoint import CheckpointError

    program = sf.Predict(Report, lm=ScriptedLM([]))
    try:
        program.batch([{{"x": 1}}], checkpoint={path!r}, progress=False)
    except CheckpointError as exc:
        print(exc)
    """
)


def test_a_fifo_as_checkpoint_is_an_error_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    os.mkfifo(path)
    script = _FIFO_RUNNER.format(root=str(ROOT), tests=str(TESTS), path=str(path))
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=30)
    assert f"{path} is not a regular file (a FIFO)" in done.stdout.decode(), done


# -- the adapter is part of the program (issue 27, finding 15) ----------------------------------


@pytest.mark.parametrize(
    "other",
    [
        lambda: sf.XMLAdapter(),
        lambda: sf.JSONAdapter(),
        lambda: sf.ChatAdapter(templates={"system": "Answer tersely."}),
        lambda: sf.ChatAdapter(max_reasks=3),
        lambda: sf.ChatAdapter(use_stop=False),
    ],
)
def test_rows_written_with_one_adapter_are_not_reused_with_another(tmp_path: Path, other: Any) -> None:
    # an XMLAdapter run reused a ChatAdapter run's rows: the digest ignored the adapter
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        program_for(fake).batch([{"x": 1}], checkpoint=path, progress=False)
        before = path.read_bytes()
        program = program_for(fake)
        program.adapter = other()
        with pytest.raises(CheckpointError, match=r"another program state .*adapter"):
            program.batch([{"x": 1}], checkpoint=path, progress=False)
        program.adapter = None  # the configured adapter counts too
        with sf.context(adapter=other()), pytest.raises(CheckpointError, match="another program state"):
            program.batch([{"x": 1}], checkpoint=path, progress=False)
        assert len(fake.requests) == 1
    assert path.read_bytes() == before


def test_the_same_adapter_settings_resume(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAIChatFake(responder=report_reply) as fake:
        for _ in range(2):  # a fresh ChatAdapter each time
            program_for(fake).batch([{"x": 1}], checkpoint=path, progress=False)
        assert len(fake.requests) == 1
    used = sf.ChatAdapter()
    fresh = used.identity()
    assert used.fallback_adapter() is not None  # its default JSON fallback, built on first use
    assert used.identity() == fresh == sf.ChatAdapter().identity() != sf.AutoAdapter().identity()
    folder = tmp_path / "wording"
    folder.mkdir()
    (folder / "system.jinja").write_text("Answer tersely.")
    terse = sf.ChatAdapter(template_dir=folder).identity()
    (folder / "system.jinja").write_text("Answer at length.")
    assert sf.ChatAdapter(template_dir=folder).identity() != terse  # an edited template is another wording
