"""``map_program``: a program over a ``ray.data.Dataset``, and the run's tally."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sigform.lm.rate_limit import bucket_identity, limiter_of
from sigform.predict.checkpoint import Checkpoint, program_digest
from sigform.ray.columns import column_plan
from sigform.ray.limits import SharedRateLimit, shared_limit
from sigform.ray.worker import ProgramWorker, WorkerPayload, pack_program

__all__ = ["RunTally", "map_program", "worker_payload"]

BATCHES_PER_WORKER = 2


class _TallyActor:
    """Counts what every worker reports after each batch."""

    def __init__(self) -> None:
        self.totals = {
            "rows": 0, "failed": 0, "resumed": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "cost": 0.0, "batches": 0, "busy_seconds": 0.0,
        }
        self.first: float | None = None
        self.last: float | None = None

    def add(
        self, ok: int, failed: int, resumed: int, prompt: int, completion: int, cost: float, busy: float
    ) -> None:
        now = time.time()
        self.first = self.first if self.first is not None else now - busy
        self.last = now
        for name, value in (
            ("rows", ok + failed), ("failed", failed), ("resumed", resumed), ("prompt_tokens", prompt),
            ("completion_tokens", completion), ("cost", cost), ("batches", 1), ("busy_seconds", busy),
        ):
            self.totals[name] += value

    def summary(self) -> dict[str, object]:
        out: dict[str, Any] = dict(self.totals)
        elapsed = (self.last - self.first) if self.first is not None and self.last is not None else 0.0
        out["seconds"] = round(elapsed, 3)
        out["rows_per_second"] = round(out["rows"] / elapsed, 1) if elapsed > 0 else None
        return out


class RunTally:
    """Progress and accounting across every worker of a :func:`map_program` run: rows done and
    failed, rows taken from a checkpoint, tokens, cost and throughput. Readable while the dataset
    is being consumed (``tally.summary()`` from another thread) and after."""

    def __init__(self) -> None:
        import ray

        self._actor: Any = ray.remote(num_cpus=0)(_TallyActor).remote()

    def summary(self) -> dict[str, Any]:
        """``rows``, ``failed``, ``resumed``, ``prompt_tokens``, ``completion_tokens``, ``cost``,
        ``seconds`` (first to last batch) and ``rows_per_second``."""
        import ray

        return dict(ray.get(self._actor.summary.remote()))


def _input_names(program: Any) -> tuple[str, ...]:
    """The columns a row gives the program: its signature's inputs, else ``forward``'s named
    parameters."""
    import inspect

    signature = getattr(program, "signature", None)
    if signature is not None:
        return tuple(signature.input_fields)
    params = inspect.signature(program.forward).parameters.values()
    named = tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    if not named:
        raise TypeError(f"{type(program).__name__}.forward names no inputs to take from columns")
    return named


def _credential_reference(credentials: str | Callable[[], str] | None) -> str | Callable[[], str] | None:
    if credentials is None or callable(credentials):
        return credentials
    if isinstance(credentials, str) and credentials.strip().startswith(("env:", "cmd:")):
        return credentials
    raise TypeError(
        "credentials= must say where each worker finds the key -- 'env:NAME' (its environment), "
        "'cmd:<command>' (run on the worker) or a callable -- never the key itself, which would "
        "travel in every task"
    )


def _program_parts(program: Any) -> tuple[object, dict[str, object], dict[str, object]]:
    """The program's structure without LMs, its saved state (with the effective LM of each
    predictor, the configured one for predictors without their own), and each LM's limits."""
    from sigform.settings import get_setting

    full = program.deepcopy()
    limits: dict[str, object] = {}
    for name, predictor in full.named_predictors():
        lm = predictor.lm if predictor.lm is not None else get_setting("lm")
        if lm is None or not callable(getattr(lm, "dump_state", None)):
            raise TypeError(
                f"predictor {name!r} has no LM that can travel to workers: give it lm=sf.LM(...) or "
                "configure one with sf.configure(lm=...)"
            )
        predictor.lm = lm
        _warn_url_credentials_stay(name, lm)
        if limiter_of(lm) is not None:
            limits[name] = lm
    state = full.dump_state()
    for _, predictor in full.named_predictors():
        predictor.lm = None  # the structure travels; LMs are rebuilt from the state
    return full, state, limits


def _warn_url_credentials_stay(name: str, lm: object) -> None:
    """Say that credentials inside the endpoint URL do not reach the workers (they get the saved
    state, which never holds one), before the run rather than as 401s from every row."""
    from sigform.lm.credentials import strip_url_credentials, url_credential_parts
    from sigform.lm.saved_state import SavedStateWarning

    # only a URL written in the code can hold credentials the saved state drops; an env:/cmd:
    # api_base is not resolved here (that would run the command on the driver just to decide)
    source = getattr(lm, "_api_base", None)
    api_base = source.get() if source is not None and source.kind == "literal" else None
    if not isinstance(api_base, str):
        return
    removed = url_credential_parts(api_base)
    if removed:
        warnings.warn(
            f"predictor {name!r}: the credentials in its LM's api_base ({', '.join(removed)}) "
            f"never travel to Ray workers, which send to {strip_url_credentials(api_base)} "
            "without them; if the endpoint takes the key as a header, pass credentials= "
            "(e.g. 'env:NAME') instead",
            SavedStateWarning,
            stacklevel=5,
        )


def _shared_limits(lms: Mapping[str, Any]) -> dict[str, SharedRateLimit]:
    """One actor per distinct limit (model, endpoint and numbers), shared by the predictors and
    workers that use it."""
    actors: dict[tuple[object, ...], SharedRateLimit] = {}
    out: dict[str, SharedRateLimit] = {}
    for name, lm in lms.items():
        existing = limiter_of(lm)
        if existing is None:  # _program_parts passes only LMs with a limit
            continue
        if isinstance(existing, SharedRateLimit):
            out[name] = existing
            continue
        limits = existing.limits
        key = (*bucket_identity(lm), limits.get("rpm"), limits.get("tpm"))
        if key not in actors:
            actors[key] = shared_limit(limits.get("rpm"), limits.get("tpm"))
        out[name] = actors[key]
    return out


def _finished_rows(directory: Path, program: object, digest: str) -> dict[str, object]:
    """Every row the run's earlier parts recorded (each part file checked like a checkpoint)."""
    rows: dict[str, object] = {}
    for part in sorted(directory.glob("*.jsonl")):
        checkpoint = Checkpoint(part, program, digest=digest, write=False)  # a worker may hold it
        try:
            rows.update(checkpoint.rows)
        finally:
            checkpoint.close()
    return rows


def worker_payload(
    program: object,
    *,
    calls_per_worker: int = 32,
    credentials: str | Callable[[], str] | None = None,
    outputs: Mapping[str, object] | None = None,
    error_column: str = "error",
    checkpoint: str | Path | None = None,
    tally: RunTally | None = None,
) -> WorkerPayload:
    """What every worker of a :func:`map_program` run receives (exactly what Ray pickles into
    the actors' constructor arguments)."""
    if not isinstance(calls_per_worker, int) or isinstance(calls_per_worker, bool) or calls_per_worker < 1:
        raise ValueError(f"calls_per_worker must be a positive integer, got {calls_per_worker!r}")
    digest = program_digest(program)
    plan = column_plan(program, outputs, error_column)
    reference = _credential_reference(credentials)
    skeleton, state, limited = _program_parts(program)
    inputs = _input_names(program)
    finished = None
    directory: str | None = None
    if checkpoint is not None:
        import ray

        path = Path(checkpoint)
        path.mkdir(parents=True, exist_ok=True)
        rows = _finished_rows(path, program, digest)
        finished = ray.put(rows) if rows else None
        directory = str(path)
    return WorkerPayload(
        skeleton=pack_program(skeleton),
        state=state,
        credentials=reference,
        limits=_shared_limits(limited),
        digest=digest,
        plan=plan,
        inputs=inputs,
        calls_per_worker=calls_per_worker,
        tally=tally._actor if tally is not None else None,
        checkpoint_dir=directory,
        finished=finished,
    )


def map_program(
    ds: Any,
    program: object,
    *,
    concurrency: int | tuple[int, int] = 2,
    batch_size: int = 64,
    calls_per_worker: int = 32,
    credentials: str | Callable[[], str] | None = None,
    outputs: Mapping[str, object] | None = None,
    error_column: str = "error",
    checkpoint: str | Path | None = None,
    tally: RunTally | None = None,
    num_cpus: float = 1,
) -> Any:
    """``ds`` with the program's output fields added as columns (lazy, like every Ray Data step).

    Each row's input fields (columns named like the program's inputs; other columns pass
    through) go to ``program.acall`` on one of ``concurrency`` Ray actors, ``calls_per_worker``
    calls in flight per actor, ``batch_size`` rows per Ray Data batch. A row that fails keeps
    null outputs and gets ``{type, message}`` in ``error_column``; no row is dropped. Column types
    follow the declared output types (see :mod:`sigform.ray.columns`); ``outputs`` names them for
    a program without one signature. A ``sigform_key`` column holds each row's stable key.

    Workers receive the program's saved state, never a credential: ``credentials`` says where
    each worker finds the key (``"env:NAME"`` in its environment, ``"cmd:..."`` run there, or a
    callable); without it a worker uses what a loaded program would (see
    :mod:`sigform.lm.saved_state`). An LM with ``rpm=``/``tpm=`` gets one limit shared by every
    worker (an actor holding the bucket). ``checkpoint`` is a directory: each worker appends the
    rows it finishes there as they complete, and a rerun with the same directory takes those
    rows from it instead of calling the LM again. ``tally`` (a :class:`RunTally`) counts rows,
    failures, tokens, cost and throughput across workers.
    """
    payload = worker_payload(
        program,
        calls_per_worker=calls_per_worker,
        credentials=credentials,
        outputs=outputs,
        error_column=error_column,
        checkpoint=checkpoint,
        tally=tally,
    )
    from ray.data import ActorPoolStrategy

    # two batches per actor at once: while one batch waits for its slowest row, the other's rows
    # keep the actor's calls in flight (the worker's loop and semaphore are shared, thread-safe)
    sizes = {"size": concurrency} if isinstance(concurrency, int) else {
        "min_size": concurrency[0], "max_size": concurrency[1]
    }
    # (named on the strategy since Ray 2.59; the ``max_concurrency=`` remote argument is deprecated)
    pool = ActorPoolStrategy(
        **sizes,
        max_tasks_in_flight_per_actor=2 * BATCHES_PER_WORKER,
        max_concurrent_calls_per_actor=BATCHES_PER_WORKER,
        enable_true_multi_threading=True,
    )
    return ds.map_batches(
        ProgramWorker,
        fn_constructor_kwargs={"payload": payload},
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=pool,
        num_cpus=num_cpus,
    )
