"""State, CPU-check and model-stamp files are written without opening what is already there.

Found attacking issue 27's FIFO landing: reads of these files skipped a FIFO, but the writers
opened ``<name>.<pid>.tmp`` (or the stamp itself) for writing, so a FIFO there hung the writer
and a symlink there sent the write into another file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_RUN = textwrap.dedent(
    """
    import dataclasses, os, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from sigform.local import _cpu_check, _model, _state
    folder = Path({folder!r})
    precious = folder / "precious.txt"
    pid = os.getpid()
    for name in ("m.gguf.verified.json", f"local-server.json.{{pid}}.tmp", f"cpu.json.{{pid}}.tmp"):
        os.mkfifo(folder / ("fifo-" + name))
        os.symlink(folder / ("fifo-" + name) if name.endswith("json") else precious, folder / name)
    target = folder / "m.gguf"
    target.write_bytes(b"x")
    _model._write_stamp(target, "ab")
    print("stamp", _model._stamp_ok(target, "ab"), flush=True)
    fields = {{f.name: None for f in dataclasses.fields(_state.ServerState)}}
    _state.write_state(_state.ServerState(**fields), folder / "local-server.json")
    print("state", (folder / "local-server.json").is_file(), flush=True)
    _cpu_check._store(folder / "cpu.json", "k", _cpu_check.CpuVerdict(True, "ok"))
    print("cpu", _cpu_check._read(folder / "cpu.json")["k"]["safe"], flush=True)
    print("precious", precious.read_text(), flush=True)
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_writers_never_open_a_fifo_or_follow_a_symlink_already_there(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    code = _RUN.format(root=str(ROOT), folder=str(tmp_path))
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a writer waited on a FIFO: {exc.stdout!r}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:4] == ["stamp True", "state True", "cpu True", "precious keep me"]
    assert not (tmp_path / "m.gguf.verified.json").is_symlink()
