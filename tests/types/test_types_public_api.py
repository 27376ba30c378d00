"""The public helpers other layers use: JSON text reading and annotation inspection."""

from __future__ import annotations

import pathlib
import re
from typing import Annotated, Optional

import pytest
from pydantic import Field

from sigform.types import JSONTextError, parse_json_text
from sigform.types.inspection import is_model_type, split_optional, strip_annotated


def test_parse_json_text_reads_strict_and_repaired_json() -> None:
    assert parse_json_text('{"a": 1, "b": [1, 2]}') == {"a": 1, "b": [1, 2]}
    assert parse_json_text('{"a": 1, "b": [1, 2,],}') == {"a": 1, "b": [1, 2]}
    assert parse_json_text('["x", "y"]') == ["x", "y"]


@pytest.mark.parametrize("text", ['{"a": "Nan', '["Lyon", "Nan', '{"a": 12'])
def test_parse_json_text_never_completes_a_cut_value(text: str) -> None:
    with pytest.raises(JSONTextError, match="cut off"):
        parse_json_text(text)


def test_json_text_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_json_text("{not json at all: ][")


def test_inspection_is_public() -> None:
    assert split_optional(Optional[int]) == (int, True)
    base, meta = strip_annotated(Annotated[int, Field(ge=0)])
    assert base is int and len(meta) == 1
    assert not is_model_type(int)


def test_adapters_use_no_private_module_of_the_value_engine() -> None:
    root = pathlib.Path(__file__).resolve().parents[2] / "sigform" / "adapters"
    private = re.compile(r"sigform\.types\.(?:_\w+|coercion\._\w+)")
    offenders = [
        f"{path.name}: {m.group()}"
        for path in root.rglob("*.py")
        for m in private.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
