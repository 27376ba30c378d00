"""Saving and loading programs as JSON: ``program.save(path)`` / ``program.load(path)``.

For each predictor (by its attribute path from :meth:`Module.named_predictors`) the file holds
the signature (field names, kinds, types, descriptions, constraints, instructions), the demos,
the LM options (``temperature=...``) and the LM's own settings -- never a secret: literal API
keys are left out by the LM, and option names that look like secrets are dropped here.

Loading matches predictors and their fields by name. A predictor or field missing on either
side, a changed type or kind, or a different program class is a :class:`ProgramStateError` (or
the signature's :class:`~sigform.errors.SignatureError`) -- never a silent reorder. Nothing is
changed unless everything matches.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sigform.errors import ProgramStateError, SignatureError
from sigform.predict.example import Example, as_example

if TYPE_CHECKING:
    from sigform.predict.module import Module
    from sigform.predict.predict import Predict

__all__ = ["FORMAT", "VERSION", "ProgramStateError", "dump_program", "load_program", "save_program"]

FORMAT = "sigform.program"
VERSION = 1


def _jsonable(value: Any, where: str) -> Any:
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise ProgramStateError(
            f"{where}: value of type {type(value).__name__} cannot be saved as JSON: {exc}"
        ) from None


def _lm_state(lm: Any) -> dict[str, Any] | None:
    dump = getattr(lm, "dump_state", None)
    if lm is None or not callable(dump):
        return None  # e.g. a ScriptedLM: nothing to restore from a file
    return {"class": type(lm).__name__, "state": _jsonable(dump(), "lm")}


def _config_state(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {k: _jsonable(v, f"{where}.config.{k}") for k, v in public_options(config).items()}


def public_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """LM options safe to save or show: without secret-named ones and without headers (which may
    carry an Authorization value)."""
    from sigform.lm.credentials import is_secret_name

    return {k: v for k, v in config.items() if k not in _HEADER_OPTIONS and not is_secret_name(k)}


_HEADER_OPTIONS = frozenset({"headers", "extra_headers"})


def predictor_state(name: str, predictor: Predict) -> dict[str, Any]:
    """JSON-ready state of one predictor."""
    state: dict[str, Any] = {
        "type": type(predictor).__name__,
        "signature": predictor.signature.dump_state(),
        "demos": [
            {
                "values": _jsonable(demo.to_dict(), f"{name}.demos[{i}]"),
                "inputs": list(demo._input_keys) if demo._input_keys is not None else None,
            }
            for i, demo in enumerate(map(as_example, predictor.demos))
        ],
        "config": _config_state(predictor.config, name),
        "lm": _lm_state(predictor.lm),
    }
    if hasattr(predictor, "native_reasoning"):
        state["native_reasoning"] = predictor.native_reasoning
    return state


def dump_program(program: Module) -> dict[str, Any]:
    """JSON-ready state of every predictor in ``program``."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "program": type(program).__name__,
        "predictors": {name: predictor_state(name, p) for name, p in program.named_predictors()},
    }


def save_program(program: Module, path: str | Path) -> Path:
    """Write :func:`dump_program` to ``path`` as JSON (atomically: a crash leaves the old file)."""
    target = Path(path)
    text = json.dumps(dump_program(program), indent=2, ensure_ascii=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _restore_demo(entry: Any, signature: Any, where: str) -> Example:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("values"), Mapping):
        raise ProgramStateError(f"{where}: malformed demo entry {entry!r}")
    from pydantic import TypeAdapter

    values = dict(entry["values"])
    fields = signature.fields
    for key, value in values.items():
        spec = fields.get(key)
        if spec is None or value is None:
            continue
        try:  # JSON gave back dicts/lists; rebuild models, Reasoning, etc. where the type says so
            values[key] = TypeAdapter(spec.annotation).validate_python(value)
        except Exception:
            pass  # keep the saved value as is: it was this demo's value when saved
    example = Example(values)
    inputs = entry.get("inputs")
    return example.with_inputs(*inputs) if inputs is not None else example


def _restore_lm(entry: Any, where: str) -> Any:
    if entry is None:
        return None
    if not isinstance(entry, Mapping) or "state" not in entry:
        raise ProgramStateError(f"{where}: malformed lm entry {entry!r}")
    if entry.get("class") != "LM":
        return None  # a custom LM class: we cannot rebuild it; the program keeps its own
    from sigform.lm import LM

    return LM.load_state(entry["state"])


def load_program(program: Module, state: Mapping[str, Any], *, restore_lm: bool = True) -> None:
    """Apply ``state`` (from :func:`dump_program`) to ``program``; all or nothing.

    With ``restore_lm``, a predictor that has no LM of its own gets the saved one (an LM set on
    the program is never replaced).
    """
    if not isinstance(state, Mapping) or state.get("format") != FORMAT:
        raise ProgramStateError("not a saved sigform program (missing format marker 'sigform.program')")
    if state.get("version") != VERSION:
        raise ProgramStateError(
            f"saved program version {state.get('version')!r} is not supported (expected {VERSION})"
        )
    saved = state.get("predictors")
    if not isinstance(saved, Mapping):
        raise ProgramStateError("saved program has no 'predictors' mapping")
    current = dict(program.named_predictors())
    missing = [n for n in current if n not in saved]
    extra = [n for n in saved if n not in current]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"in the program but not saved: {', '.join(missing)}")
        if extra:
            parts.append(f"saved but not in the program: {', '.join(extra)}")
        raise ProgramStateError(
            f"saved state does not match {type(program).__name__} by predictor name ({'; '.join(parts)})"
        )
    updates = []
    for name, predictor in current.items():
        entry = saved[name]
        if not isinstance(entry, Mapping):
            raise ProgramStateError(f"predictor {name!r}: malformed entry")
        if entry.get("type", type(predictor).__name__) != type(predictor).__name__:
            raise ProgramStateError(
                f"predictor {name!r} was saved as a {entry['type']} but is a {type(predictor).__name__} here"
            )
        if "signature" not in entry:
            raise ProgramStateError(f"predictor {name!r}: the saved entry has no signature")
        try:
            signature = predictor.signature.load_state(entry["signature"])
        except SignatureError as exc:
            raise SignatureError(f"predictor {name!r}: {exc}") from None
        demos = [
            _restore_demo(d, signature, f"{name}.demos[{i}]") for i, d in enumerate(entry.get("demos", []))
        ]
        config = dict(entry.get("config") or {})
        lm = _restore_lm(entry.get("lm"), name) if restore_lm and predictor.lm is None else None
        updates.append((predictor, signature, demos, config, lm, entry))
    for predictor, signature, demos, config, lm, entry in updates:  # everything matched: apply
        predictor.signature = signature
        predictor.demos = demos
        predictor.config = config
        if lm is not None:
            predictor.lm = lm
        if "native_reasoning" in entry and hasattr(predictor, "native_reasoning"):
            predictor.native_reasoning = entry["native_reasoning"]


def load_program_file(program: Module, path: str | Path, *, restore_lm: bool = True) -> None:
    """Read JSON written by :func:`save_program` into ``program``."""
    try:
        state = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProgramStateError(f"{path}: not valid JSON ({exc})") from None
    load_program(program, state, restore_lm=restore_lm)
