"""The shared parse corpus, run through the value engine where no format layer is needed.

Each case is a full completion. Here we only take the ones whose structure is trivially
clean (a JSON object with exactly the output keys, chat headers with exactly the output
fields, one plain XML tag per field) and check the value-level part: ``coerce_fields`` must
give the expected values, or raise ``FieldValueError`` on ``fail`` cases. The adapters' own
tests cover the structural part of every case.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import re
import sys
from typing import Any

import pytest
from corpus_grading import CORPUS, CORPUS_ABSENT, CORPUS_SKIP_REASON
from pydantic import BaseModel, TypeAdapter

from sigform.errors import FieldValueError
from sigform.types import coerce_fields, resolve_type_name

if CORPUS_ABSENT:
    pytest.skip(CORPUS_SKIP_REASON, allow_module_level=True)


def _load_namespace() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("parse_corpus_types_for_values", CORPUS / "types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return dict(module.NAMESPACE)


NAMESPACE = _load_namespace()
CASES = [
    json.loads(line)
    for line in (CORPUS / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
_CHAT_HEADER = re.compile(r"\[\[ ## (\w+) ## \]\]")


def _json_values(text: str, fields: list[str]) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and list(data) == fields else None


def _chat_values(text: str, fields: list[str]) -> dict[str, Any] | None:
    parts = _CHAT_HEADER.split(text)
    if parts[0].strip():
        return None
    names, bodies = parts[1::2], parts[2::2]
    if "completed" in names:
        cut = names.index("completed")
        names, bodies = names[:cut], bodies[:cut]
    if sorted(names) != sorted(fields):
        return None
    return dict(zip(names, bodies, strict=True))


def _xml_values(text: str, fields: list[str]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    rest = text
    for f in fields:
        hits = re.findall(rf"<{f}>(.*?)</{f}>", text, re.S)
        if len(hits) != 1 or "<" in hits[0] or "&" in hits[0]:
            return None  # nested tags or entities need the XML layer
        out[f] = hits[0]
        rest = rest.replace(f"<{f}>{hits[0]}</{f}>", "", 1)
    return out if not rest.strip() else None


def extract(case: dict[str, Any]) -> dict[str, Any] | None:
    """The raw field values of a structurally trivial completion, else None."""
    fields = list(case["signature"]["outputs"])
    text = case["completion"].strip()
    if text.startswith("{"):
        return _json_values(text, fields)
    if text.startswith("[["):
        return _chat_values(text, fields)
    if text.startswith("<") and not text.startswith("<?") and not text.startswith("<!"):
        return _xml_values(text, fields)
    return None


def canonical(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return canonical(value.value)
    if isinstance(value, BaseModel):
        return canonical(value.model_dump())
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, str):
        return value.strip()
    return value


def same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _annotations(case: dict[str, Any]) -> dict[str, Any]:
    return {k: resolve_type_name(t, NAMESPACE) for k, t in case["signature"]["outputs"].items()}


COVERED = [(c, v) for c in CASES if (v := extract(c)) is not None]


@pytest.mark.parametrize(("case", "values"), COVERED, ids=[c["id"] for c, _ in COVERED])
def test_corpus_case_value_level(case: dict[str, Any], values: dict[str, Any]) -> None:
    annotations = _annotations(case)
    if case.get("expect_error"):
        with pytest.raises(FieldValueError):
            coerce_fields(values, annotations)
        return
    got = coerce_fields(values, annotations)
    for name, ann in annotations.items():
        expected = TypeAdapter(ann).validate_python(case["expect"][name])
        assert same(canonical(got[name]), canonical(expected)), (name, got[name], expected)


def test_corpus_coverage_is_reported() -> None:
    by_group: dict[str, int] = {}
    for case, _ in COVERED:
        by_group[case["group"]] = by_group.get(case["group"], 0) + 1
    print(f"\nvalue-level corpus coverage: {len(COVERED)}/{len(CASES)} cases {by_group}")
    # the trivial extraction must keep reaching most cases, else this file tests little
    assert len(COVERED) >= 140
    assert by_group.get("fail", 0) >= 20


def test_type_strings_resolve_like_the_corpus_eval() -> None:
    spec = importlib.util.spec_from_file_location("parse_corpus_types_eval", CORPUS / "types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for case in CASES:
        for t in case["signature"]["outputs"].values():
            theirs = eval(t, {"__builtins__": {}}, dict(NAMESPACE))  # trusted corpus strings
            assert resolve_type_name(t, NAMESPACE) == theirs, t
