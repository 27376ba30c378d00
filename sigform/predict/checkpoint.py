"""Resumable batches: ``program.batch(examples, checkpoint="run.jsonl")``.

Every finished example is appended to the checkpoint file as one JSON line as soon as it
completes (flushed and fsync'ed), so a run that is stopped -- killed, crashed, interrupted -- can
be started again with the same arguments and skips what is already done: its results are read
back from the file, and only the other examples call the LM. Failed examples are not recorded;
a restart runs them again.

Each example is identified by a stable key: a SHA-256 over the program's saved state (its
signatures, demos and LM settings, as :meth:`Module.dump_state` writes them, plus the configured
LM's settings when a predictor has none of its own, and each predictor's adapter with its
settings) and the example's inputs. A program that
changed -- other demos, another model or temperature -- gets other keys; the file's first line
records the program's digest, and a file written by another program state is refused with a
clear error rather than silently reused or mixed.

The file is untrusted input: it is read as JSON only (nothing in it is run or imported). A
result is rebuilt by validating each stored field against the type the program's signatures
declare for it (a ``date`` field comes back as a ``date``, a model as that model); a result
whose values would not come back equal (an undeclared field of a type JSON cannot carry) is not
recorded -- that example runs again on a restart -- and a warning says which field. A malformed
line is an error naming the line; only a damaged last line (a write cut off by a crash) is
dropped, with a warning. Restored results carry their outputs, not the raw LM text or usage of
the first run.

One run writes a checkpoint at a time: the file is locked (``flock``) while it is open, and a
second run on it is a :class:`CheckpointError` naming the file and, where the OS says, the
process holding it. Rows are only appended (``O_APPEND``), so nothing written is ever overwritten.

Format: the first line is ``{"format": "sigform.checkpoint", "version": 1, "program": <digest>}``;
every other line is ``{"key": <hex>, "output": {field: value, ...}}`` (or ``"value"`` for a
program that returns a plain JSON value instead of a prediction). A Predict's rows must hold
exactly its signature's output fields: a row with other fields, or a plain value, is an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from sigform import jsonvalue
from sigform.errors import CheckpointError
from sigform.probes import probe
from sigform.signatures.prediction import Prediction, PredictionMeta, Record

__all__ = ["Checkpoint", "CheckpointError", "CheckpointWarning", "ResumedRun", "program_digest", "row_key"]

FORMAT = "sigform.checkpoint"
VERSION = 1
_KEY_CHARS = frozenset("0123456789abcdef")


class CheckpointWarning(UserWarning):
    """A finished example could not be recorded so that it comes back equal: it will run again."""


def _canonical(value: object, what: str) -> str:
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        data = to_jsonable_python(value)
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint: {what} cannot be written as JSON ({exc}); a checkpointed batch needs "
            "JSON-representable inputs (str, numbers, dates, enums, pydantic models, lists, dicts)"
        ) from None


def program_digest(program: Any) -> str:
    """SHA-256 of the program's saved state, the configured LM's settings and each predictor's
    adapter (another adapter writes other prompts and parses otherwise), in hex."""
    from sigform.settings import get_setting

    state: dict[str, object] = {"program": program.dump_state()}
    configured = get_setting("lm")
    dump = getattr(configured, "dump_state", None)
    if callable(dump) and any(getattr(p, "lm", None) is None for _, p in program.named_predictors()):
        state["configured_lm"] = dump()
    state["adapters"] = {name: _adapter_identity(p) for name, p in program.named_predictors()}
    return hashlib.sha256(_canonical(state, "the program's state").encode()).hexdigest()


def _adapter_identity(predictor: object) -> object:
    """The identity of the adapter ``predictor`` calls with (its own, else the configured one,
    else the default), as :meth:`Adapter.identity` gives it."""
    from sigform.predict.predict import default_adapter  # deferred: predict's module imports batch
    from sigform.settings import get_setting

    adapter = getattr(predictor, "adapter", None) or get_setting("adapter") or default_adapter()
    identity = getattr(adapter, "identity", None)
    return identity() if callable(identity) else f"{type(adapter).__module__}.{type(adapter).__qualname__}"


def row_key(digest: str, inputs: Mapping[str, object]) -> str:
    """The stable key of one example: the program digest and the example's inputs."""
    text = digest + "\n" + _canonical(dict(inputs), "an example's inputs")
    return hashlib.sha256(text.encode()).hexdigest()


def _declared_outputs(program: Any) -> dict[str, object]:
    """Output field name -> declared type, over the program's signatures (a name two predictors
    declare with different types is left out: no one type to restore it with)."""
    found: dict[str, object] = {}
    clashing: set[str] = set()
    signatures = [p.signature for _, p in program.named_predictors()]
    own = getattr(program, "signature", None)
    if own is not None and own not in signatures:
        signatures.append(own)
    for signature in signatures:
        for name, spec in signature.output_fields.items():
            if name in found and found[name] != spec.annotation:
                clashing.add(name)
            found.setdefault(name, spec.annotation)
    return {k: v for k, v in found.items() if k not in clashing}


def _exact_outputs(program: object) -> tuple[str, ...] | None:
    """The output names every result of ``program`` has: a Predict's (ChainOfThought included)
    returns a prediction of exactly its signature's outputs; other programs return what they like."""
    from sigform.predict.predict import Predict  # deferred: predict's module imports batch

    if isinstance(program, Predict):
        return tuple(program.signature.output_fields)
    return None


class _Codec:
    """Outputs to JSON and back, by the declared field types (JSON values as they are without one)."""

    def __init__(
        self,
        declared: Mapping[str, Any],
        exact: tuple[str, ...] | None = None,
        result: type[Prediction] = Prediction,
    ) -> None:
        self.declared = declared
        self.exact = exact  # the output names every result has (a Predict's), when known
        self.result = result  # what the program returns: its signature class, or Prediction
        self._adapters: dict[str, object] = {}

    def _adapter(self, name: str) -> Any:
        adapter = self._adapters.get(name)
        if adapter is None:
            from pydantic import TypeAdapter

            adapter = self._adapters[name] = TypeAdapter(self.declared[name])
        return adapter

    def decode_field(self, name: str, value: object) -> object:
        return self._adapter(name).validate_python(value) if name in self.declared else value

    def encode(self, result: object) -> tuple[dict[str, object] | None, str | None]:
        """The JSON entry for ``result`` and None, or None and the name of a field that would not
        come back equal."""
        from pydantic_core import to_jsonable_python

        if isinstance(result, Record):
            values = result.to_dict()
            encoded: dict[str, object] = {}
            for name, value in values.items():
                question = f"checkpoint: does field {name!r} come back from JSON"
                got = probe(question, partial(self._round_trip, name, value, to_jsonable_python), None)
                if got is None or not _same(got[1], value):
                    return None, name
                encoded[name] = got[0]
            return {"output": encoded}, None
        try:
            data = json.loads(json.dumps(result))
        except (TypeError, ValueError):
            return None, "the result"
        return ({"value": data}, None) if _same(data, result) else (None, "the result")

    def _round_trip(
        self, name: str, value: object, jsonable: Callable[[object], object]
    ) -> tuple[object, object]:
        """The field's JSON data, and that data read back by its declared type."""
        data = json.loads(json.dumps(jsonable(value)))
        return data, self.decode_field(name, data)

    def decode(self, entry: Mapping[str, object], where: str) -> object:
        if "value" in entry and self.exact is None:
            return entry["value"]
        output = entry.get("output")
        if not isinstance(output, Mapping):
            raise CheckpointError(f"{where}: a row needs an 'output' object")
        if self.exact is not None and set(output) != set(self.exact):
            raise CheckpointError(
                f"{where}: the row's fields {sorted(map(str, output))} are not the program's outputs "
                f"{list(self.exact)}; was the file written by another program, or edited?"
            )
        values = {}
        for name, value in output.items():
            try:
                values[str(name)] = self.decode_field(str(name), value)
            except Exception as exc:
                raise CheckpointError(
                    f"{where}: field {name!r} does not fit the program's declared type "
                    f"({type(exc).__name__}: {str(exc)[:200]}); was the file written by another program?"
                ) from None
        return self.result._make(values, PredictionMeta())


def _same(a: object, b: object) -> bool:
    return probe("checkpoint: are two values equal", lambda: type(a) is type(b) and bool(a == b), False)


class Checkpoint:
    """One checkpoint file opened for a program: finished rows by key, and an appender."""

    def __init__(
        self, path: str | os.PathLike[str], program: object, *, digest: str | None = None, write: bool = True
    ) -> None:
        """``digest`` defaults to :func:`program_digest` of ``program`` (a worker that rebuilt the
        program elsewhere passes the digest its driver computed). ``write=False`` only reads the
        finished rows (no lock: the file may still be another process's, e.g. a Ray worker's)."""
        self.path = Path(path)
        # "finished/" names a folder even when there is none yet (Path() drops the slash)
        self._folder = os.fspath(path).endswith(("/", os.sep))
        self.digest = digest if digest is not None else program_digest(program)
        self._codec = _Codec(
            _declared_outputs(program), _exact_outputs(program), getattr(program, "_result", Prediction)
        )
        self._rows: dict[str, Mapping[str, object]] = {}
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._file: BinaryIO | None = None
        if write:
            self._file = self._open()
        else:
            self._read_only()

    # -- reading ---------------------------------------------------------------------------
    def _open(self) -> BinaryIO:
        """The file opened for appending and locked for this run, its finished rows loaded."""
        from sigform.files import FileLocked, NotRegularFile, describe_process, lock_exclusive, open_regular

        if self._folder or self.path.is_dir():  # checkpoint="finished/" is Ray's form
            raise CheckpointError(
                f"{self.path}: is a folder; batch() takes a checkpoint file, e.g. "
                f"checkpoint={str(self.path / 'run.jsonl')!r} (a folder is sigform.ray.map_program's form)"
            )
        if self.path.is_symlink() and not self.path.exists():  # opening would create its target
            raise CheckpointError(
                f"{self.path}: is a symlink to {os.readlink(self.path)!r}, which does not exist; "
                "remove the link or give batch() another checkpoint path"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except NotRegularFile as exc:
            raise CheckpointError(f"{exc}; give batch() a checkpoint file") from None
        except OSError as exc:  # a denied folder, a file where a folder should be, ...
            raise CheckpointError(
                f"{self.path}: cannot open the checkpoint ({exc.strerror or exc}); give batch() a "
                "path you can write"
            ) from None
        # appends only (O_APPEND): every write lands at the end, never over another line
        handle: BinaryIO = os.fdopen(fd, "a+b")
        try:
            try:
                lock_exclusive(fd, str(self.path))
            except FileLocked as exc:
                raise CheckpointError(
                    f"{self.path}: another run is writing this checkpoint ({describe_process(exc.holder)}); "
                    "two runs on one file would mix their rows. Wait for that run to finish, or give "
                    "this one another checkpoint path"
                ) from None
            handle.seek(0)
            data = handle.read()
            if self._torn_header(data):
                # this program's first line, cut off by a crash before any row: nothing to keep
                warnings.warn(
                    f"{self.path}: its first line was cut off (the run writing it stopped before any "
                    "row was recorded); the checkpoint starts again",
                    CheckpointWarning,
                    stacklevel=4,
                )
                handle.truncate(0)
                data = b""
            if not data:
                self._append(handle, {"format": FORMAT, "version": VERSION, "program": self.digest})
                return handle
            keep = self._read(data)
            if keep < len(data):  # a write cut off by a crash: that example runs again
                handle.truncate(keep)
        except BaseException:
            handle.close()
            raise
        return handle

    def _read_only(self) -> None:
        from sigform.files import NotRegularFile, open_regular

        try:
            fd = open_regular(self.path, os.O_RDONLY)
        except NotRegularFile as exc:
            raise CheckpointError(f"{exc}; give batch() a checkpoint file") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        if data and not self._torn_header(data):  # else no header yet, or one cut off: no rows
            self._read(data)

    def _torn_header(self, data: bytes) -> bool:
        """Whether ``data`` is the start of this program's first line and nothing else: a
        header cut off by a crash (or zeros where its write was lost), before any row."""
        header = _line({"format": FORMAT, "version": VERSION, "program": self.digest})
        return bool(data) and b"\n" not in data and header.startswith(data.rstrip(b"\0"))

    def _read(self, data: bytes) -> int:
        """Load the finished rows from the file's ``data``; returns the byte length to keep.

        Rows are only ever appended, one write per line, so a crash can damage only the last
        line: left unfinished, or (a lost disk write) ended but not JSON. That line is dropped
        with a warning and its example runs again; every row before it is kept."""
        complete = data.rfind(b"\n") + 1
        lines = data[:complete].split(b"\n")[:-1]
        if not lines:
            raise CheckpointError(
                f"{self.path}: not a sigform checkpoint of this program (no complete first line: "
                f"{len(data)} bytes that do not start this program's header); delete the file to start "
                "over, or give batch() a new path"
            )
        self._check_header(lines[0])
        keep, torn = complete, len(lines) + 1 if complete < len(data) else None
        for number, raw in enumerate(lines[1:], start=2):
            where = f"{self.path}, line {number}"
            try:
                entry = jsonvalue.loads(raw)
            except ValueError:
                if number != len(lines):
                    raise CheckpointError(f"{where}: not JSON; the checkpoint is damaged") from None
                keep, torn = complete - len(raw) - 1, number
                break
            key = entry.get("key") if isinstance(entry, dict) else None
            if not isinstance(key, str) or len(key) != 64 or not set(key) <= _KEY_CHARS:
                raise CheckpointError(f"{where}: a row needs a 'key' of 64 hex digits")
            if "output" not in entry and "value" not in entry:
                raise CheckpointError(f"{where}: a row needs an 'output' object")
            self._codec.decode(entry, where)  # malformed values fail now, not mid-run
            self._rows.setdefault(key, entry)
        if torn is not None:
            kept = f"{len(self._rows)} recorded row{'' if len(self._rows) == 1 else 's'} kept"
            warnings.warn(
                f"{self.path}, line {torn}: the last row was cut off (the run writing it stopped "
                f"mid-write); it is dropped and its example runs again ({kept})",
                CheckpointWarning,
                stacklevel=4,
            )
        return keep

    def _check_header(self, raw: bytes) -> None:
        try:
            header = jsonvalue.loads(raw)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CheckpointError(
                f"{self.path}: not a sigform checkpoint (its first line is not "
                f'{{"format": "{FORMAT}", ...}}); give batch() a new path'
            )
        if header.get("version") != VERSION:
            version = header.get("version")
            raise CheckpointError(f"{self.path}: checkpoint version {version!r} is not {VERSION}")
        if header.get("program") != self.digest:
            raise CheckpointError(
                f"{self.path}: written by another program state (signatures, demos, adapter or LM "
                "settings differ), so its results are not this program's. Use a new checkpoint path, or "
                "delete the file to start over"
            )

    # -- rows ------------------------------------------------------------------------------
    def key(self, inputs: Mapping[str, object]) -> str:
        return row_key(self.digest, inputs)

    def finished(self, key: str) -> bool:
        return key in self._rows

    @property
    def rows(self) -> Mapping[str, Mapping[str, Any]]:
        """Every finished row's JSON entry, by key."""
        return self._rows

    def adopt(self, rows: Mapping[str, Mapping[str, object]]) -> None:
        """Count rows another file of the same run recorded as finished here too (not rewritten)."""
        for key, entry in rows.items():
            self._rows.setdefault(key, entry)

    def decode(self, entry: Mapping[str, object]) -> Any:
        """A recorded entry's result (entries come from files checked on opening)."""
        return self._codec.decode(entry, f"{self.path}: row")

    def result(self, key: str) -> Any:
        """The recorded result of a finished row."""
        return self._codec.decode(self._rows[key], f"{self.path}: row {key[:12]}")

    def record(self, key: str, result: object) -> bool:
        """Append a finished row durably; False (and a warning, once per field) when the result
        would not come back equal, so the row is left to run again."""
        entry, problem = self._codec.encode(result)
        if entry is None:
            if problem not in self._warned:
                self._warned.add(str(problem))
                warnings.warn(
                    f"checkpoint: {problem} cannot be stored so that it reads back the same (declare "
                    "its type in the signature, or return JSON values); such examples run again on a "
                    "restart",
                    CheckpointWarning,
                    stacklevel=3,
                )
            return False
        line = {"key": key, **entry}
        with self._lock:
            if key in self._rows:
                return True
            if self._file is None:
                raise CheckpointError(f"{self.path}: opened to read only")
            self._append(self._file, line)
            self._rows[key] = line
        return True

    @staticmethod
    def _append(handle: BinaryIO, entry: Mapping[str, object]) -> None:
        handle.write(_line(entry))
        handle.flush()
        os.fsync(handle.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(entry: Mapping[str, object]) -> bytes:
    """One line of the file, as it is written."""
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class ResumedRun:
    """A batch's view of its checkpoint: which examples are left, their restored results, and
    recording each one that finishes."""

    def __init__(
        self, path: str | os.PathLike[str], program: object, inputs: list[Mapping[str, Any]]
    ) -> None:
        self.checkpoint = Checkpoint(path, program)
        self.keys = [self.checkpoint.key(x) for x in inputs]
        self.todo = [i for i, key in enumerate(self.keys) if not self.checkpoint.finished(key)]

    def restore_into(self, results: list[Any]) -> None:
        """Put every finished example's recorded result in its slot."""
        left = set(self.todo)
        for index, key in enumerate(self.keys):
            if index not in left:
                results[index] = self.checkpoint.result(key)

    def finished(self, index: int, result: object) -> None:
        self.checkpoint.record(self.keys[index], result)

    def close(self) -> None:
        self.checkpoint.close()
