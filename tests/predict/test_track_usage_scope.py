"""``sf.track_usage()`` is one ``with`` block: entering the same one again is refused at once."""

from __future__ import annotations

import asyncio

import pytest

import sigform as sf
from sigform.lm.interface import Usage
from sigform.predict.context_vars import add_usage


def _one_request() -> None:
    add_usage(Usage(prompt_tokens=1, completion_tokens=2))


def test_entering_an_open_block_again_is_refused_and_counts_nothing_twice() -> None:
    # the block's object was entered twice, so every request inside was counted twice and the
    # outer exit raised a bare "Token has already been used once"
    scope = sf.track_usage()
    with scope as tracker:
        _one_request()
        with pytest.raises(RuntimeError, match=r"already open; call sf\.track_usage"):
            scope.__enter__()
        _one_request()
    assert tracker.requests == 2 and tracker.usage.completion_tokens == 4
    _one_request()  # the block is closed: not counted
    assert tracker.requests == 2


def test_one_block_shared_by_two_tasks_is_refused_in_the_second() -> None:
    scope = sf.track_usage()
    seen: list[str] = []

    async def task(name: str) -> None:
        try:
            with scope:
                await asyncio.sleep(0.01)
                _one_request()
            seen.append(f"{name} ok")
        except RuntimeError as exc:
            seen.append(f"{name}: {exc}")

    async def main() -> None:
        await asyncio.gather(task("first"), task("second"))

    asyncio.run(main())
    assert seen[0].startswith("second: this track_usage() block is already open") and seen[1] == "first ok"
    assert scope.tracker.requests == 1


def test_a_closed_block_can_be_entered_again_and_keeps_counting() -> None:
    scope = sf.track_usage()
    with scope:
        _one_request()
    with scope as tracker:
        _one_request()
    assert tracker.requests == 2
    with pytest.raises(RuntimeError, match="without being entered"):
        sf.track_usage().__exit__(None, None, None)
