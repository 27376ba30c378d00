"""Grading a parser against a corpus of typed LM completions (the format of ``shared/parse-corpus``).

A corpus is a folder with ``cases.jsonl`` (one case per line: ``format``, ``signature.outputs``
as type strings, ``completion``, and ``expect`` or ``expect_error``) and ``types.py`` (the names
the type strings use, with ``outputs_spec(case)``). Each case gets one of five outcomes:
``correct``; ``missed`` (raised where a value was expected); ``WRONG`` (a wrong value came back);
``rejected`` (raised on a must-fail case, which is right); ``ACCEPT`` (a value on a must-fail
case). WRONG and ACCEPT are the silent failures. Comparison: enums by value, models by
``model_dump()``, a bool never equals a number, ints and floats numerically, strings stripped.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

__all__ = ["OUTCOMES", "SILENT", "expected_values", "load_cases", "load_types", "outcome", "plain", "same"]

OUTCOMES = ("correct", "missed", "WRONG", "rejected", "ACCEPT")
SILENT = frozenset({"WRONG", "ACCEPT"})


def load_types(folder: Path) -> Any:
    """The corpus's ``types.py`` loaded by path (never as ``types``, the stdlib module)."""
    spec = importlib.util.spec_from_file_location("parse_corpus_types", Path(folder) / "types.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no types.py in {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_cases(path: Path) -> list[dict[str, Any]]:
    """Cases from a JSONL file."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def plain(value: object) -> Any:
    """Enums as their values, models as their dumps, containers recursively."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def same(got: object, want: object) -> bool:
    """The corpus comparison of two plain values."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return float(got) == float(want)
    if isinstance(got, str) and isinstance(want, str):
        return got.strip() == want.strip()
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b) for a, b in zip(got, want, strict=True))
    return got == want


def expected_values(case: dict[str, Any], types_module: Any) -> dict[str, Any]:
    """The case's ``expect`` validated into its annotated types, in field order."""
    outputs = types_module.outputs_spec(case)
    return {k: TypeAdapter(ann).validate_python(case["expect"][k]) for k, ann in outputs.items()}


def outcome(case: dict[str, Any], types_module: object, got: dict[str, Any] | None) -> str:
    """The outcome of a parser that returned ``got`` (``None``: it raised) on ``case``."""
    if got is None:
        return "rejected" if case.get("expect_error") else "missed"
    if case.get("expect_error"):
        return "ACCEPT"
    want = {k: plain(v) for k, v in expected_values(case, types_module).items()}
    got = {k: plain(v) for k, v in got.items()}
    return "correct" if list(got) == list(want) and all(same(got[k], want[k]) for k in want) else "WRONG"
