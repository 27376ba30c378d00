"""What runs inside each Ray Data actor: the program rebuilt from its saved state, on an event loop.

Ray Data calls :class:`ProgramWorker` with one Arrow batch at a time. The worker runs the
batch's rows through ``program.acall`` on the process's event loop (:mod:`sigform.runtime`, so
connections and clients stay warm across batches), at most ``calls_per_worker`` at once, and returns the
batch with the output columns, the error column and the row key added. A failing row becomes
an error cell; no row is dropped.

The worker is built from a :class:`WorkerPayload`: the program's structure without any LM, its
saved state (the JSON :meth:`~sigform.predict.module.Module.dump_state` writes: signatures,
demos, LM settings -- never a credential), and the caller's credential *reference*
(``"env:NAME"``, ``"cmd:..."`` or a callable), resolved here, on the worker.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from sigform import runtime
from sigform.lm.interface import Usage
from sigform.predict.checkpoint import Checkpoint, row_key
from sigform.predict.context_vars import track_usage
from sigform.ray.columns import ColumnPlan

__all__ = ["KEY_COLUMN", "ProgramWorker", "WorkerPayload"]

KEY_COLUMN = "sigform_key"


@dataclass
class WorkerPayload:
    """Everything a worker receives (pickled by Ray): data and references, no secret."""

    skeleton: bytes  # the program with every predictor's LM removed (pack_program)
    state: dict[str, Any]  # program.dump_state(): JSON
    credentials: str | Callable[[], str] | None
    limits: dict[str, Any]  # predictor name -> SharedRateLimit
    digest: str
    plan: ColumnPlan
    inputs: tuple[str, ...]
    calls_per_worker: int
    tally: Any = None  # the run's tally actor
    checkpoint_dir: str | None = None
    finished: Any = None  # ObjectRef of {key: entry} recorded by earlier runs


def _signature_from(name: str, fields: list[tuple[Any, ...]], instructions: str | None) -> object:
    from sigform.signatures.fields import FieldSpec
    from sigform.signatures.signature import _build

    specs = [FieldSpec(*spec) for spec in fields]  # name, kind, annotation, desc, constraints
    return _build(name, specs, instructions)


def pack_program(program: object) -> bytes:
    """``program`` pickled for a worker. Signature classes travel as their fields and
    instructions (rebuilt there with the same field types), so signatures made at run time --
    ``Predict("question -> answer")`` -- travel too; other classes go as cloudpickle sends them."""
    import io

    from ray import cloudpickle

    from sigform.signatures.signature import Signature, SignatureMeta

    class _Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: object) -> Any:
            if isinstance(obj, SignatureMeta) and obj is not Signature:
                fields = [
                    (s.name, s.kind, s.annotation, s.desc, dict(s.constraints)) for s in obj._fields.values()
                ]
                return _signature_from, (obj.__name__, fields, obj._explicit_instructions)
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=5).dump(program)
    return buffer.getvalue()


def build_program(payload: WorkerPayload) -> Any:
    """The program, rebuilt on this worker: structure + saved state + this worker's credential."""
    import pickle

    program = pickle.loads(payload.skeleton)  # from the driver of this run, not from a file
    program.load_state(payload.state, restore_lm=True, api_key=payload.credentials)
    for name, predictor in program.named_predictors():
        limit = payload.limits.get(name)
        if limit is not None and predictor.lm is not None:
            predictor.lm.rate_limit = limit  # one bucket for every worker
    return program


class ProgramWorker:
    """The callable class handed to ``Dataset.map_batches`` (one instance per Ray actor)."""

    def __init__(self, payload: WorkerPayload) -> None:
        self.payload = payload
        self.program = build_program(payload)
        self.checkpoint: Checkpoint | None = None
        if payload.checkpoint_dir is not None:
            import ray

            part = Path(payload.checkpoint_dir) / f"part-{uuid.uuid4().hex}.jsonl"
            self.checkpoint = Checkpoint(part, self.program, digest=payload.digest)
            if payload.finished is not None:
                self.checkpoint.adopt(ray.get(payload.finished))
        self.gate: asyncio.Semaphore | None = None

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = batch.to_pylist()
        missing = [name for name in self.payload.inputs if name not in batch.column_names]
        if missing:
            raise ValueError(
                f"the dataset has no column {missing[0]!r}, an input of the program "
                f"(columns: {', '.join(batch.column_names)})"
            )
        started = time.perf_counter()
        outcomes = runtime.run(self._run(rows))
        keys, results, errors, usage, skipped = outcomes
        for name, column in self.payload.plan.columns(results, errors).items():
            batch = _set_column(batch, name, column)
        batch = _set_column(batch, KEY_COLUMN, pa.array(keys, type=pa.string()))
        if self.payload.tally is not None:
            failed = sum(e is not None for e in errors)
            self.payload.tally.add.remote(
                len(rows) - failed, failed, skipped, usage.prompt_tokens, usage.completion_tokens,
                usage.cost or 0.0, time.perf_counter() - started,
            )
        return batch

    async def _run(
        self, rows: list[Mapping[str, object]]
    ) -> tuple[list[str], list[object], list[BaseException | None], Usage, int]:
        if self.gate is None:  # made on the process's loop, where every batch runs
            self.gate = asyncio.Semaphore(self.payload.calls_per_worker)
        inputs = [{name: row[name] for name in self.payload.inputs} for row in rows]
        keys = [row_key(self.payload.digest, x) for x in inputs]
        done = await asyncio.gather(*(self._one(key, x) for key, x in zip(keys, inputs, strict=True)))
        usage = Usage()
        for _, _, used, _ in done:
            usage = usage + used
        skipped = sum(resumed for *_, resumed in done)
        return keys, [d[0] for d in done], [d[1] for d in done], usage, skipped

    async def _one(
        self, key: str, inputs: Mapping[str, object]
    ) -> tuple[object, BaseException | None, Usage, bool]:
        checkpoint = self.checkpoint
        if checkpoint is not None and checkpoint.finished(key):
            return checkpoint.decode(checkpoint.rows[key]), None, Usage(), True
        assert self.gate is not None
        async with self.gate:
            with track_usage() as tracker:
                try:
                    value = await self.program.acall(**inputs)
                except Exception as exc:
                    return None, exc, tracker.usage, False
        if checkpoint is not None:
            checkpoint.record(key, value)
        return value, None, tracker.usage, False


def _set_column(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    index = table.schema.get_field_index(name)
    if index >= 0:
        return table.set_column(index, name, column)
    return table.append_column(name, column)


def worker_env() -> dict[str, str]:
    """Environment a local Ray instance should give its workers so they import this sigform."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
