"""Review findings in sigform/types: caches keyed by annotations stay bounded and race-free."""

from __future__ import annotations

from typing import Any, Literal

from sigform.types import json_schema
from sigform.types import schema as schema_mod
from sigform.types.coercion import _plan


class _ClearedAfterInsert(dict):
    """A dict that another thread clears right after each insert (the interleaving, made exact)."""

    def setdefault(self, key: Any, default: Any = None) -> Any:
        value = super().setdefault(key, default)
        self.clear()
        return value


def test_schema_cache_is_bounded_over_many_distinct_annotations() -> None:
    before = len(schema_mod._CACHE)
    for i in range(schema_mod._MAX_CACHE + 50):
        json_schema(Literal[f"choice-{i}"])
    assert len(schema_mod._CACHE) <= schema_mod._MAX_CACHE
    assert before <= schema_mod._MAX_CACHE


def test_schema_lookup_survives_a_concurrent_clear(monkeypatch: Any) -> None:
    monkeypatch.setattr(schema_mod, "_CACHE", _ClearedAfterInsert())
    assert json_schema(Literal["only-here"])["const"] == "only-here"


def test_plan_lookup_survives_a_concurrent_clear(monkeypatch: Any) -> None:
    monkeypatch.setattr(_plan, "_PLANS", _ClearedAfterInsert())
    node = _plan.plan_for(Literal["x-review"])
    assert node is not None


def test_adapter_lookup_survives_a_concurrent_clear(monkeypatch: Any) -> None:
    monkeypatch.setattr(_plan, "_ADAPTERS", _ClearedAfterInsert())
    adapter = _plan.adapter_for(Literal["y-review"])
    assert adapter.validate_python("y-review") == "y-review"
