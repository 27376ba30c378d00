"""Saving and loading programs as JSON: ``program.save(path)`` / ``program.load(path)``.

For each predictor (by its attribute path from :meth:`Module.named_predictors`) the file holds
the signature (field names, kinds, types, descriptions, constraints, instructions), the demos,
a demo selector's kind, settings and pool (see :mod:`sigform.predict.demo_selectors`),
the LM options (``temperature=...``) and the LM's own settings -- never a credential: no API key
and no ``env:``/``cmd:`` reference (see :mod:`sigform.lm.saved_state`), no header, no option
whose name looks like a secret.

A program file is data people share, so loading treats it as untrusted: it never runs a
command, reads an environment variable, or changes where requests go or which LM answers. The
saved LM is rebuilt only when the caller asks (``restore_lm=True``), for predictors without an
LM of their own, with the credential from the caller (``api_key=``); saved options other than
request parameters, and credential fields of older files, are ignored with a warning.

Loading matches predictors and their fields by name. A predictor or field missing on either
side, a changed type or kind, or a different program class is a :class:`ProgramStateError` (or
the signature's :class:`~sigform.errors.SignatureError`) -- never a silent reorder. Nothing is
changed unless everything matches.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sigform.errors import ProgramStateError, SignatureError
from sigform.lm.saved_state import request_options
from sigform.predict.demo_selectors import selector_loader
from sigform.predict.example import Example, as_example
from sigform.probes import probe

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's own from Python 3.11

    from sigform.predict.module import Module
    from sigform.predict.predict import Predict
    from sigform.signatures.prediction import Prediction
    from sigform.signatures.state import SignatureState

__all__ = [
    "FORMAT",
    "VERSION",
    "DemoState",
    "PredictorState",
    "ProgramState",
    "ProgramStateError",
    "dump_program",
    "load_program",
    "save_program",
]

FORMAT = "sigform.program"
VERSION = 1


class DemoState(TypedDict):
    """One saved demo: its values (as JSON) and which keys are inputs (None: not marked)."""

    values: object
    inputs: list[str] | None


class PredictorState(TypedDict):
    """One predictor's saved state, as :func:`dump_program` writes it."""

    type: str
    signature: SignatureState
    demos: list[DemoState]
    config: dict[str, object]
    lm: dict[str, object] | None
    native_reasoning: NotRequired[bool]
    demo_selector: NotRequired[dict[str, object]]


class ProgramState(TypedDict):
    """A program's saved state, as :func:`dump_program` writes it (a file is read as any mapping
    and checked where it is read: see :func:`load_program`)."""

    format: str
    version: int
    program: str
    predictors: dict[str, PredictorState]


def _jsonable(value: object, where: str) -> object:
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise ProgramStateError(
            f"{where}: value of type {type(value).__name__} cannot be saved as JSON: {exc}"
        ) from exc


def _lm_state(lm: object) -> dict[str, object] | None:
    dump = getattr(lm, "dump_state", None)
    if lm is None or not callable(dump):
        return None  # e.g. a ScriptedLM: nothing to restore from a file
    return {"class": type(lm).__name__, "state": _jsonable(dump(), "lm")}


def _config_state(config: Mapping[str, object], where: str) -> dict[str, object]:
    return {
        k: _jsonable(v, f"{where}.config.{k}")
        for k, v in public_options(config).items()
        if not _is_reference(v)
    }


def _is_reference(value: object) -> bool:
    return isinstance(value, str) and value.strip().startswith(("env:", "cmd:"))


def public_options(config: Mapping[str, object]) -> dict[str, object]:
    """LM options safe to save or show: without secret-named ones and without headers (which may
    carry an Authorization value)."""
    from sigform.lm.credentials import is_secret_name

    return {k: v for k, v in config.items() if k not in _HEADER_OPTIONS and not is_secret_name(k)}


_HEADER_OPTIONS = frozenset({"headers", "extra_headers"})


def _demos_state(demos: Any, where: str) -> list[DemoState]:
    return [
        {
            "values": _jsonable(demo.to_dict(), f"{where}[{i}]"),
            "inputs": list(demo._input_keys) if demo._input_keys is not None else None,
        }
        for i, demo in enumerate(map(as_example, demos))
    ]


def _selector_state(selector: Any, where: str) -> dict[str, object] | None:
    """A demo selector's settings plus its pool (saved like demos), or None."""
    if selector is None:
        return None
    state = dict(selector.dump_state())
    state["pool"] = _demos_state(selector.pool, f"{where}.demo_selector.pool")
    return state


def _restore_selector(
    entry: object, signature: object, where: str, restore_lm: bool, api_key: object
) -> object:
    if entry is None:
        return None
    if not isinstance(entry, Mapping) or not isinstance(entry.get("pool"), list):
        raise ProgramStateError(f"{where}: malformed demo_selector entry")
    load = selector_loader(entry.get("kind"), where)  # the file picks a registered kind, nothing else
    pool = [_restore_demo(d, signature, f"{where}.pool[{i}]") for i, d in enumerate(entry["pool"])]
    return load(entry, pool, where, restore_lm, api_key)


def predictor_state(name: str, predictor: Predict[..., Prediction]) -> PredictorState:
    """JSON-ready state of one predictor."""
    state: PredictorState = {
        "type": type(predictor).__name__,
        "signature": predictor.signature.dump_state(),
        "demos": _demos_state(predictor.demos, f"{name}.demos"),
        "config": _config_state(predictor.config, name),
        "lm": _lm_state(predictor.lm),
    }
    if hasattr(predictor, "native_reasoning"):
        state["native_reasoning"] = predictor.native_reasoning
    selector = _selector_state(predictor.demo_selector, name)
    if selector is not None:
        state["demo_selector"] = selector
    return state


def dump_program(program: Module) -> ProgramState:
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


def _as_type(annotation: Any, value: object) -> object:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation).validate_python(value)


def _restore_demo(entry: object, signature: Any, where: str) -> Example:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("values"), Mapping):
        raise ProgramStateError(f"{where}: malformed demo entry {entry!r}")
    values = dict(entry["values"])
    fields = signature.fields
    for key, value in values.items():
        spec = fields.get(key)
        if spec is None or value is None:
            continue
        # JSON gave back dicts/lists; rebuild models, Reasoning, etc. where the type says so, else
        # keep the saved value as is: it was this demo's value when saved
        rebuild = partial(_as_type, spec.annotation, value)
        values[key] = probe("a saved demo value as its type", rebuild, value)
    example = Example(values)
    inputs = entry.get("inputs")
    return example.with_inputs(*inputs) if inputs is not None else example


def _restore_lm(entry: object, where: str, restore: bool, api_key: object) -> Any:
    if entry is None:
        return None
    if not isinstance(entry, Mapping) or "state" not in entry:
        raise ProgramStateError(f"{where}: malformed lm entry")
    if entry.get("class") != "LM":
        return None  # a custom LM class: we cannot rebuild it; the program keeps its own
    from sigform.lm.saved_state import SavedStateWarning, credential_fields, lm_from_state

    if restore:
        return lm_from_state(entry["state"], where=f"{where}.lm", api_key=api_key)
    state = entry["state"]
    ignored = credential_fields(state) if isinstance(state, Mapping) else []
    if ignored:  # an older file: say that what it names is not used (nor would it be on restore)
        warnings.warn(
            f"{where}.lm: the saved LM names credentials ({', '.join(ignored)}); they are ignored: "
            "saved programs never carry credentials",
            SavedStateWarning,
            stacklevel=5,
        )
    return None


def load_program(
    program: Module, state: Mapping[str, object], *, restore_lm: bool = False, api_key: object = None
) -> None:
    """Apply ``state`` (from :func:`dump_program`) to ``program``; all or nothing.

    The saved LM is ignored unless ``restore_lm``: then a predictor that has no LM of its own
    gets one rebuilt from the saved model, endpoint, request defaults and options, whose
    credential is ``api_key`` (a literal, ``env:``/``cmd:`` or a callable: the caller's), else the
    configured LM's when it is the same model at the same endpoint (an LM set on the program is
    never replaced). Saved per-predictor options other than request parameters are ignored with
    a warning.
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
            raise SignatureError(f"predictor {name!r}: {exc}") from exc
        demos = [
            _restore_demo(d, signature, f"{name}.demos[{i}]") for i, d in enumerate(entry.get("demos", []))
        ]
        config = entry.get("config") or {}
        if not isinstance(config, Mapping):
            raise ProgramStateError(f"predictor {name!r}: the saved config is not a mapping")
        config = request_options(config, f"predictor {name!r}")
        native = entry.get("native_reasoning")
        if native is not None and not isinstance(native, bool):
            raise ProgramStateError(f"predictor {name!r}: saved native_reasoning must be true or false")
        lm = _restore_lm(entry.get("lm"), f"predictor {name!r}", restore_lm and predictor.lm is None, api_key)
        where = f"{name}.demo_selector"
        selector = _restore_selector(entry.get("demo_selector"), signature, where, restore_lm, api_key)
        updates.append((predictor, signature, demos, config, lm, selector, entry))
    for predictor, signature, demos, config, lm, selector, entry in updates:  # everything matched: apply
        predictor.signature = signature
        predictor.demos = demos
        predictor.demo_selector = selector
        predictor.config = config
        if lm is not None:
            predictor.lm = lm
        if entry.get("native_reasoning") is not None and hasattr(predictor, "native_reasoning"):
            predictor.native_reasoning = entry["native_reasoning"]


def load_program_file(
    program: Module, path: str | Path, *, restore_lm: bool = False, api_key: object = None
) -> None:
    """Read JSON written by :func:`save_program` into ``program`` (see :func:`load_program`)."""
    try:
        state = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ProgramStateError(f"{path}: not valid JSON ({type(exc).__name__}: {exc})") from exc
    load_program(program, state, restore_lm=restore_lm, api_key=api_key)
