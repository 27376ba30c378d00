"""Saving and loading a signature's state as JSON, matching fields by name (never by position)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from sigform.errors import SignatureError

if TYPE_CHECKING:
    from sigform.signatures.fields import FieldKind
    from sigform.signatures.signature import DynamicSignature, SignatureMeta

__all__ = [
    "STATE_VERSION",
    "FieldState",
    "SignatureState",
    "dump_state",
    "load_state",
    "signature_from_state",
]

STATE_VERSION = 1


class FieldState(TypedDict):
    """One field of a saved signature."""

    name: str
    kind: FieldKind
    type: str  # the annotation's name, resolved again on loading
    desc: str
    constraints: dict[str, object]


class SignatureState(TypedDict):
    """A signature's saved state, as :func:`dump_state` writes it (a saved file is read as any
    mapping, checked where it is read)."""

    version: int
    instructions: str
    explicit_instructions: bool
    fields: list[FieldState]


def dump_state(sig: SignatureMeta) -> SignatureState:
    """Instructions plus, per field: name, kind, type string, description and constraints."""
    from sigform.types import type_name

    return {
        "version": STATE_VERSION,
        "instructions": sig.instructions,
        "explicit_instructions": sig.has_explicit_instructions,
        "fields": [
            {
                "name": spec.name,
                "kind": spec.kind,
                "type": type_name(spec.annotation),
                "desc": spec.desc,
                "constraints": dict(spec.constraints),
            }
            for spec in sig.fields.values()
        ],
    }


def _entries_by_name(state: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    if not isinstance(state, Mapping) or not isinstance(state.get("fields"), list):
        raise SignatureError("signature state must be a mapping with a 'fields' list (from dump_state())")
    entries: dict[str, Mapping[str, object]] = {}
    for entry in state["fields"]:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise SignatureError(f"malformed field entry in signature state: {entry!r}")
        if entry["name"] in entries:
            raise SignatureError(f"signature state names field `{entry['name']}` twice")
        entries[entry["name"]] = entry
    return entries


def load_state(sig: SignatureMeta, state: Mapping[str, Any]) -> type[DynamicSignature]:
    """Apply saved instructions/descriptions/constraints to ``sig``; every field must match by name.

    A field missing on either side, a changed kind or a changed type is a clear error: a saved
    program is never silently applied to a different signature.
    """
    from sigform.types import type_name

    entries = _entries_by_name(state)
    missing = [n for n in sig.fields if n not in entries]
    extra = [n for n in entries if n not in sig.fields]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"not in the saved state: {', '.join(missing)}")
        if extra:
            parts.append(f"in the saved state but not in the signature: {', '.join(extra)}")
        raise SignatureError(
            f"saved signature state does not match {sig.__name__} by field name ({'; '.join(parts)})"
        )
    specs = []
    for name, spec in sig.fields.items():
        entry = entries[name]
        if entry.get("kind", spec.kind) != spec.kind:
            raise SignatureError(f"field `{name}` is saved as an {entry['kind']} but is an {spec.kind} here")
        if "type" in entry and entry["type"] != type_name(spec.annotation):
            raise SignatureError(
                f"field `{name}` is saved with type {entry['type']} but is {type_name(spec.annotation)} here"
            )
        specs.append(
            spec.replace(
                desc=entry.get("desc", spec.desc), constraints=entry.get("constraints", spec.constraints)
            )
        )
    explicit = state.get("instructions") if state.get("explicit_instructions", True) else None
    return sig._derive(specs, explicit)


def signature_from_state(
    state: Mapping[str, Any], *, types: Mapping[str, object] | None = None, name: str = "LoadedSignature"
) -> type[DynamicSignature]:
    """Rebuild a signature from saved state alone, resolving type strings with ``types``."""
    from sigform.signatures.fields import FieldSpec
    from sigform.signatures.namespace import signature_namespace
    from sigform.signatures.signature import _build, _validate_fields
    from sigform.types import resolve_type_name

    entries = _entries_by_name(state)
    type_text = " ".join(str(entry.get("type", "")) for entry in entries.values())
    namespace = {**signature_namespace(type_text), **(types or {})}
    specs = []
    for entry in entries.values():
        kind = entry.get("kind")
        if kind not in ("input", "output"):
            raise SignatureError(f"field `{entry['name']}` has kind {kind!r}; expected 'input' or 'output'")
        annotation = resolve_type_name(entry.get("type", "str"), namespace)
        specs.append(
            FieldSpec(entry["name"], kind, annotation, entry.get("desc", ""), entry.get("constraints", {}))
        )
    _validate_fields(specs, name)
    explicit = state.get("instructions") if state.get("explicit_instructions", True) else None
    return _build(name, specs, explicit)
