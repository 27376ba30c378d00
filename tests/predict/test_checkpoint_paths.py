"""Checkpoint paths a user or a crash gets wrong (issue 27, third pass).

A dangling symlink was a raw ``FileNotFoundError`` (or, with its target's folder present, the
link's target was created); ``checkpoint="finished/"`` for a folder that does not exist yet
silently created a *file* named ``finished``; a first line cut off by a crash (before any row
could be written) made the file "not a sigform checkpoint" for ever, to be deleted by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sigform as sf
from sigform.predict.checkpoint import Checkpoint, CheckpointError, CheckpointWarning, program_digest, row_key
from sigform.testing import ScriptedLM


def _program(instructions: str = "Say it.") -> sf.Predict:
    return sf.Predict(sf.make_signature("x: int -> kind", instructions), lm=ScriptedLM(["odd"]))


def _header(program: sf.Predict) -> bytes:
    entry = {"format": "sigform.checkpoint", "version": 1, "program": program_digest(program)}
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


def test_a_dangling_symlink_is_a_clear_error_and_its_target_is_not_created(tmp_path: Path) -> None:
    link = tmp_path / "run.jsonl"
    target = tmp_path / "elsewhere.jsonl"  # its folder exists: opening would have created it
    link.symlink_to(target)
    with pytest.raises(CheckpointError, match=r"is a symlink to .*elsewhere\.jsonl'?, which does not exist"):
        Checkpoint(link, _program())
    assert not target.exists()
    gone = tmp_path / "gone"
    (tmp_path / "missing-folder-link").symlink_to(gone / "x")
    with pytest.raises(CheckpointError, match="which does not exist"):  # was FileNotFoundError
        Checkpoint(tmp_path / "missing-folder-link", _program())


def test_a_path_ending_in_a_slash_is_a_folder_even_before_it_exists(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"is a folder; batch\(\) takes a checkpoint file"):
        Checkpoint(str(tmp_path / "finished") + "/", _program())
    assert list(tmp_path.iterdir()) == []  # no file named `finished` was made


def test_an_unopenable_path_is_a_checkpoint_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(CheckpointError, match="cannot open the checkpoint"):
        Checkpoint(tmp_path / "a-file" / "run.jsonl", _program())


@pytest.mark.parametrize("cut", [1, 12, 40, -2, "zeros", "prefix+zeros"])
def test_a_first_line_cut_off_by_a_crash_starts_the_checkpoint_again(tmp_path: Path, cut: object) -> None:
    program = _program()
    header = _header(program)
    if cut == "zeros":
        torn = b"\0" * 30
    elif cut == "prefix+zeros":
        torn = header[:20] + b"\0" * 50
    else:
        assert isinstance(cut, int)
        torn = header[:cut]
    path = tmp_path / "run.jsonl"
    path.write_bytes(torn)
    Checkpoint(path, program, write=False)  # a reader sees no rows, no error
    with pytest.warns(CheckpointWarning, match="first line was cut off"):
        checkpoint = Checkpoint(path, program)
    with checkpoint:
        key = row_key(checkpoint.digest, {"x": 1})
        assert checkpoint.record(key, sf.Prediction(kind="odd"))
    assert path.read_bytes().startswith(header)
    assert Checkpoint(path, program, write=False).finished(key)


def test_a_cut_first_line_of_another_program_says_what_to_do(tmp_path: Path) -> None:
    other = _header(_program("Another instruction."))
    path = tmp_path / "run.jsonl"
    path.write_bytes(other[:-10])  # past the digest's start: another program's
    with pytest.raises(CheckpointError, match="delete the file to start over, or give batch"):
        Checkpoint(path, _program())
    assert path.read_bytes() == other[:-10]  # left as it was
