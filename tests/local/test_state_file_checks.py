"""Review findings in sigform.local: the shared-server state file is verified before reuse."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from sigform.local._state import ServerState, read_state


def _state(**changes: object) -> dict[str, object]:
    state = ServerState(port=8123, pid=4242, owner_pid=4141, model_path="/m.gguf", alias="gemma-3-270m",
                        started_at=1.0, log_path="/l.log")
    return {**asdict(state), **changes}


@pytest.mark.parametrize(
    "changes",
    [
        {"host": "evil.example"},  # prompts would be sent off the machine
        {"host": "10.0.0.5"},
        {"host": 7},
        {"model_path": None},
        {"alias": ["gemma-3-270m"]},
        {"started_at": "yesterday"},
    ],
)
def test_a_state_file_naming_another_host_or_with_bad_fields_counts_as_absent(
    tmp_path: Path, changes: dict[str, object]
) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_state(**changes)))
    assert read_state(path) is None


def test_the_loopback_state_is_read(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_state()))
    assert read_state(path) == ServerState(**_state())  # type: ignore[arg-type]
