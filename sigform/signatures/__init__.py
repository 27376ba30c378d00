"""Signatures: declare what goes into a program and what comes out.

See :class:`Signature` (class form), :func:`make_signature` (string and dict forms) and
:func:`InputField` / :func:`OutputField`.
"""

from sigform.signatures.fields import CONSTRAINT_NAMES, FieldDecl, FieldSpec, InputField, OutputField
from sigform.signatures.signature import (
    RESERVED_FIELD_NAMES,
    DynamicSignature,
    Signature,
    SignatureMeta,
    make_signature,
)
from sigform.signatures.state import dump_state, load_state, signature_from_state

__all__ = [
    "CONSTRAINT_NAMES",
    "RESERVED_FIELD_NAMES",
    "DynamicSignature",
    "FieldDecl",
    "FieldSpec",
    "InputField",
    "OutputField",
    "Signature",
    "SignatureMeta",
    "dump_state",
    "load_state",
    "make_signature",
    "signature_from_state",
]
