"""A threaded batch of a Predict on the fast path, run as ``abatch`` on the I/O loop.

On the fast path (the openai SDK), requests sent side by side from threads already go over the
process's one I/O loop (:mod:`sigform.lm.io_loop`); only the program's own work -- formatting,
parsing, history, hooks -- ran in the batch's threads. 64 threads taking turns at the GIL, each
handing its request to the loop and waiting for it to come back, cost ~150 µs of CPU per call
more than ``abatch`` does for the same work (issue 18: threaded ``batch`` no worse than
``abatch``). So ``batch`` runs such a program the way ``abatch`` does, on that loop, with
``num_threads`` as its concurrency, while the calling thread waits:

* only a :class:`~sigform.predict.Predict` whose ``forward`` and ``aforward`` are sigform's own
  twins (a subclass that overrides one of them runs in threads, as before);
* only with a plain :class:`sigform.LM` (no custom backend) that takes the fast path, given to the
  program or configured (another LM's async side may block: threads keep it parallel);
* only with an adapter whose ``run`` and ``arun`` are sigform's own;
* only with the default executor, and never from the loop's own thread.

Each example still runs in a copy of the caller's context (settings, scoped callbacks, usage
tracking), and results, failures, ``max_errors``, progress and checkpoints are those of
``abatch``. What differs: hooks see the I/O loop's thread, not a ``sigform-batch`` worker.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from sigform.settings import get_setting

__all__ = ["run_on_io_loop", "runs_on_io_loop"]


def runs_on_io_loop(program: Any) -> bool:
    """Whether a threaded ``batch`` of ``program`` runs as ``abatch`` on the I/O loop."""
    from sigform.lm.io_loop import in_io_thread
    from sigform.lm.model import LM
    from sigform.predict.predict import Predict

    if not isinstance(program, Predict) or in_io_thread():
        return False
    cls = type(program)
    if not _sigform_twins(cls, "forward", "aforward"):
        return False
    lm = program.lm if program.lm is not None else get_setting("lm")
    if type(lm) is not LM or lm.options.backend is not None or not lm.uses_fast_path():
        return False
    adapter = program.adapter if program.adapter is not None else get_setting("adapter")
    # None: the default AutoAdapter, sigform's own
    return adapter is None or _sigform_twins(type(adapter), "run", "arun")


def _sigform_twins(cls: type, sync_name: str, async_name: str) -> bool:
    sync, async_ = getattr(cls, sync_name, None), getattr(cls, async_name, None)
    return (
        sync is not None
        and async_ is not None
        and sync.__module__.startswith("sigform.")
        and _owner(cls, sync_name) is _owner(cls, async_name)
    )


def _owner(cls: type, name: str) -> type | None:
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


def run_on_io_loop(
    program: Any,
    examples: Sequence[Any],
    *,
    concurrency: int,
    max_errors: int | None,
    return_failures: bool,
    progress: bool | None,
    checkpoint: str | os.PathLike[str] | None,
) -> Any:
    """``abatch`` on the I/O loop, in a copy of the caller's context; the caller waits."""
    from sigform.lm.io_loop import run_in_io_loop
    from sigform.predict.batch import run_abatch

    coro = run_abatch(
        program,
        examples,
        concurrency=concurrency,
        max_errors=max_errors,
        return_failures=return_failures,
        progress=progress,
        checkpoint=checkpoint,
    )
    return run_in_io_loop(coro)  # the loop's task runs in a copy of this thread's context
