"""Fixtures of the local-server tests: the fake ``llama_cpp`` of ``local_fakes``, and the real
embedded model's server for the tests marked ``local_model``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_fakes import install_fake

from sigform import local
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real embedded model's server (its api_base), in a cache dir of its own, started once
    per test module and stopped after it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGFORM_CACHE_DIR", str(tmp_path_factory.mktemp("local-cache")))
        mp.setattr(_server_registry, "_current", None)
        mp.setattr(_server_registry, "_owned", [])
        try:
            yield local.ensure_server()
        finally:
            _server_registry._stop_owned()
