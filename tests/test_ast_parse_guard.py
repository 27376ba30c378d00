"""The test session parses Python one call at a time (tests/conftest.py): on CPython 3.11 two
threads in ``ast.parse`` at once fail with "AST constructor recursion depth mismatch", and pytest
formatting a failure while litellm formats the same one in its logging thread stopped a CI run."""

from __future__ import annotations

import ast
import gc
import sys
import threading
import time

SOURCE = "\n".join(f"def f{i}(x):\n    return [x[{i}] + y * {i} for y in range({i})]" for i in range(150))


class _Finaliser:
    def __del__(self) -> None:
        for _ in range(20):  # Python code run by the collector, inside the parse: a thread switch
            pass


def _garbage(cycles: int) -> None:
    for _ in range(cycles):
        a, b = _Finaliser(), _Finaliser()
        a.other, b.other = b, a  # type: ignore[attr-defined]


def test_two_threads_parsing_at_once_both_get_their_trees() -> None:
    errors: list[BaseException] = []
    stop = threading.Event()

    def other_thread() -> None:
        while not stop.is_set():
            try:
                ast.parse("x[1] + y")
            except SystemError as exc:  # pragma: no cover - the failure this guards against
                errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=other_thread, daemon=True)
    thread.start()
    try:
        parsed = 0
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            gc.disable()
            _garbage(300)
            gc.enable()  # the next allocations collect the cycles, inside the parse below
            try:
                ast.parse(SOURCE)
                parsed += 1
            except SystemError as exc:  # pragma: no cover
                errors.append(exc)
    finally:
        stop.set()
        thread.join(timeout=5)
        sys.setswitchinterval(interval)
    assert parsed > 0
    assert errors == []
