"""Run programs over Ray Data datasets: ``pip install "sigform[ray]"``.

    import ray
    import sigform as sf
    from sigform.ray import map_program

    ray.init()                                   # or ray.init(address="ray://head:10001")
    ds = ray.data.read_parquet("questions.parquet")
    out = map_program(ds, program, concurrency=4, credentials="env:OPENAI_API_KEY")
    out.write_parquet("answers/")

:func:`map_program` adds the program's output fields as typed columns and an error column (see
:mod:`sigform.ray.columns`); workers get the program's saved state and resolve credentials
themselves (:mod:`sigform.ray.worker`); ``rpm=``/``tpm=`` on an LM hold across every worker
(:mod:`sigform.ray.limits`); ``checkpoint=`` makes a run resumable and :class:`RunTally`
counts rows, failures, tokens, cost and throughput. ``import sigform`` never imports Ray: only
importing this package does.
"""

from __future__ import annotations

import importlib.util

# found, not imported (that costs seconds): without this, the first Ray call of a run raised a
# bare "No module named 'ray'" from deep inside map_program or RunTally
if importlib.util.find_spec("ray") is None:
    raise ModuleNotFoundError('sigform.ray needs Ray: pip install "sigform[ray]"', name="ray")

from sigform.ray.limits import SharedRateLimit, shared_limit
from sigform.ray.run import RunTally, map_program

__all__ = ["RunTally", "SharedRateLimit", "map_program", "shared_limit"]
