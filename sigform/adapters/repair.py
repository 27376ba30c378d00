"""Retries that can change the answer (issue 12).

At temperature 0 a free-text re-ask tends to bring back the same answer: a wasted call. So:

* When the LM constrains decoding to a JSON schema (``json_schema`` or llama.cpp's
  ``json_object`` with a schema), a candidate whose values do not validate is asked again for
  **only the failing fields**, with a schema that rules the failure out: numbers as numbers,
  dates as a ``YYYY-MM-DD`` pattern, Literal/Enum values as ``enum``. The values that did
  validate are kept from the first answer.
* No run sends a request identical to one it already sent (:func:`request_key`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sigform.adapters.fields import SigCache, field_views
from sigform.errors import ParseError
from sigform.jsonvalue import JSON, JSONObject
from sigform.lm.interface import Completion, LMProtocol
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.adapters.base import Adapter
    from sigform.adapters.call_plan import ResponseFormats
    from sigform.adapters.json_adapter import JSONAdapter
    from sigform.signatures import Signature

__all__ = [
    "DATE_PATTERN",
    "RepairPlan",
    "constrained_modes",
    "constrained_schema",
    "failing_fields",
    "request_key",
]

# ``[0-9]``, not ``\d``: llama-cpp-python's schema-to-grammar port reads ``\d`` as a literal "d"
DATE_PATTERN = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
# the written forms of a number that sigform's parser reads (thousands commas, a currency sign):
# a JSON number grammar cuts `2,450.00` to `2` at the comma (it is the grammar's key separator)
NUMBER_TEXT_PATTERN = "^-?[$€£¥]?[0-9][0-9,]{0,14}([.][0-9]{1,6})?$"  # `[.]`: that port emits `\\.` unescaped
# a date as a text states it (`May 1, 2025`, `12 February 2025`); the parser reads or refuses it
DATE_TEXT_PATTERN = "^[A-Za-z0-9][A-Za-z0-9 ,./-]{3,30}$"
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
CONSTRAINED_MODES = ("json_schema", "json_object_schema")


def request_key(
    messages: Sequence[Mapping[str, object]],
    kwargs: Mapping[str, object],
    formats: ResponseFormats | None = None,
) -> str:
    """A fingerprint of what a request sends (messages, parameters and the response formats it
    tries, not driver hints)."""
    tried = None
    if formats is not None:
        signature = formats.signature
        tried = [list(formats.modes), repr(getattr(signature, "signature", signature))]
    return json.dumps([list(messages), dict(kwargs), tried], sort_keys=True, ensure_ascii=False, default=repr)


def constrained_modes(json_adapter: JSONAdapter, lm: LMProtocol) -> list[str]:
    """The schema-constrained request modes ``lm`` may take, best first (empty: none)."""
    return [m for m in json_adapter.modes_for(lm) if m in CONSTRAINED_MODES]


def constrained_schema(annotations: Mapping[str, object], *, lenient: bool = False) -> JSONObject:
    """The strict object schema of ``annotations`` for constrained decoding, with every date as
    a ``YYYY-MM-DD`` pattern (a pattern is what every schema-constrained server supports).

    ``lenient`` (a first request) lets numbers and dates be written as the input writes them, as
    strings that sigform's parser reads or refuses (:func:`lenient_values`); a retry of a value
    that failed uses the strict form."""
    from sigform.types import strict_json_schema

    schema = strict_json_schema(dict(annotations))
    return lenient_values(schema) if lenient else _dates_as_pattern(schema)


def lenient_values(schema: JSONObject) -> JSONObject:
    """``node`` with each date schema, and each number schema that is neither nullable nor
    bounded, replaced by a string of its written forms.

    A small model copies `$2,450.00` or `May 1, 2025` from the text well and converts it badly:
    under a number grammar it stops at the comma (`2`, a wrong value that validates), and under
    a date pattern it writes null. The parse policy still decides what such a string means."""
    return _lenient_object(schema, nullable=False)


def _lenient(node: JSON, *, nullable: bool) -> JSON:
    if isinstance(node, list):
        return [_lenient(v, nullable=nullable) for v in node]
    return _lenient_object(node, nullable=nullable) if isinstance(node, dict) else node


def _lenient_object(node: JSONObject, *, nullable: bool) -> JSONObject:
    # a bounded number (a score in [0, 1]) is no amount copied from the text, and its bounds would
    # be lost: it stays a number (as a string the model wrote `"100.95"` for a 0..1 confidence).
    # A nullable number stays a JSON number: offered a quoted number or null, the embedded model
    # wrote null for every event capacity of the dev split (12 of 12, 2 of them stated)
    kind = node.get("type")
    if kind in ("number", "integer") and not nullable and not _BOUNDS.intersection(node):
        return {"type": "string", "pattern": NUMBER_TEXT_PATTERN}
    if kind == "string" and node.get("format") == "date":
        return {"type": "string", "pattern": DATE_TEXT_PATTERN}
    options = node.get("anyOf")
    with_null = isinstance(options, list) and {"type": "null"} in options
    return {k: _lenient(v, nullable=with_null and k == "anyOf") for k, v in node.items()}


def _dates_as_pattern(schema: JSONObject) -> JSONObject:
    out = {k: _date_patterns(v) for k, v in schema.items()}
    if out.get("type") == "string" and out.get("format") == "date":
        del out["format"]
        out["pattern"] = DATE_PATTERN
    return out


def _date_patterns(node: JSON) -> JSON:
    if isinstance(node, list):
        return [_date_patterns(v) for v in node]
    return _dates_as_pattern(node) if isinstance(node, dict) else node


class RepairPlan:
    """How one adapter asks again for failing fields under a schema constraint."""

    def __init__(self) -> None:
        self._subsets: SigCache[dict[tuple[str, ...], type[Signature]]] = SigCache()

    def failing_signature(self, signature: type[Signature], failing: Sequence[str]) -> type[Signature]:
        """``signature`` with only the ``failing`` outputs (cached per signature and subset)."""
        per_sig = self._subsets.get(signature)
        if per_sig is None:
            per_sig = self._subsets.put(signature, {})
        key = tuple(failing)
        sub = per_sig.get(key)
        if sub is None:
            sub = signature
            for name in signature.output_fields:
                if name not in failing:
                    sub = sub.delete(name)
            per_sig[key] = sub
        return sub

    def messages(
        self,
        adapter: Adapter,
        signature: type[Signature],
        messages: list[Message],
        answer: str,
        error: ParseError,
    ) -> list[Message]:
        """The conversation so far, the failed answer, and a request for the failing fields."""
        failing = [v for v in field_views(signature)[1] if v.name in failing_fields(error)]
        text = adapter.templates.render("repair", errors=error.errors, outputs=failing)
        return [*messages, {"role": "assistant", "content": answer}, {"role": "user", "content": text}]

    @staticmethod
    def kept_values(
        adapter: Adapter, signature: type[Signature], completion: Completion, failing: Sequence[str]
    ) -> dict[str, Any]:
        """The values of the first answer that validated (every output but ``failing``)."""
        from sigform.types import coerce_fields

        found = adapter.extract(signature, completion.text or "")
        views = [v for v in field_views(signature)[1] if v.name not in failing]
        return coerce_fields(
            {v.name: found.values[v.name] for v in views}, {v.name: v.validation_annotation for v in views}
        )

    @staticmethod
    def merge(
        signature: type[Signature], kept: Mapping[str, object], fixed: Mapping[str, object]
    ) -> dict[str, Any]:
        return {name: (fixed[name] if name in fixed else kept[name]) for name in signature.output_fields}


def failing_fields(error: ParseError) -> list[str]:
    """The fields ``error`` names, once each, in order."""
    return list(dict.fromkeys(e.field for e in error.errors))
