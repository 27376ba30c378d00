"""Test isolation shared by every test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_configuration() -> Iterator[None]:
    """``sf.configure(...)`` is process-wide: undo whatever a test (or a README block) set."""
    from sigform import settings

    saved = dict(settings._global)
    yield
    with settings._global_lock:
        settings._global.clear()
        settings._global.update(saved)
