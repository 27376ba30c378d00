"""Test isolation shared by every test module."""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings

# the loopback OpenAI-compatible server and its fixtures (lm_server, fast_path, isolated_cache),
# registered here so that pytest rewrites the asserts inside it
pytest_plugins = ["lm_fake_openai"]


def _one_at_a_time(parse: object) -> object:
    """CPython 3.11 keeps the AST constructor's recursion counter per interpreter, not per
    thread: two ``ast.parse`` calls at once end in ``SystemError: AST constructor recursion
    depth mismatch``. litellm formats a failed call's traceback in a thread of its own (the
    ``traceback`` module parses each line for its carets) while pytest formats the same failure
    in the main thread, and pytest stopped with an INTERNALERROR in CI. Tests parse one at a time.
    """
    lock = threading.RLock()

    def locked_parse(*args: object, **kwargs: object) -> object:
        with lock:
            return parse(*args, **kwargs)  # type: ignore[operator]

    return locked_parse


ast.parse = _one_at_a_time(ast.parse)  # type: ignore[assignment]

# CI replays the same examples on every run (a red build always reproduces, and never because of
# a lucky draw); developers' runs keep exploring new examples and saving the failures they find
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _isolated_configuration() -> Iterator[None]:
    """``sf.configure(...)`` is process-wide: undo whatever a test (or a README block) set."""
    from sigform import settings

    saved = dict(settings._global)
    yield
    with settings._global_lock:
        settings._global.clear()
        settings._global.update(saved)


@pytest.fixture(scope="session")
def _capabilities_dir(tmp_path_factory: pytest.TempPathFactory) -> object:
    return tmp_path_factory.mktemp("endpoint-capabilities")


@pytest.fixture(autouse=True)
def _isolated_endpoint_capabilities(
    _capabilities_dir: object, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """What endpoints accepted is remembered per process and in the cache folder: each test
    starts with nothing learned, and never writes to the user's cache folder."""
    from pathlib import Path

    from sigform.lm import capabilities

    path = Path(str(_capabilities_dir)) / capabilities.FILE_NAME
    monkeypatch.setattr(capabilities, "capabilities_path", lambda: path)
    capabilities.forget(disk=True)
    yield
    capabilities.forget(disk=True)


@pytest.fixture(autouse=True)
def _no_server_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI-compatible endpoint is asked once what it serves (``text_mode.server_facts``):
    the fake servers of the tests would count those probes as requests. Tests of the detection
    put the real probe back (tests/lm/test_server_detection.py)."""
    from sigform.lm import text_mode

    unknown = {"model_type": None, "grammar": False}
    monkeypatch.setattr(text_mode, "server_facts", lambda model, api_base, text=False: unknown)
