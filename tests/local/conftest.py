"""Fixtures of the local-server tests: the fake ``llama_cpp`` of ``local_fakes``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_fakes import install_fake

from sigform.local import _server_registry


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """An isolated cache dir, a fake model file and the fake server; yields the cache dir.

    Servers the test started are stopped afterwards, whatever it did."""
    cache = install_fake(monkeypatch, tmp_path)
    try:
        yield cache
    finally:
        _server_registry._stop_owned()
