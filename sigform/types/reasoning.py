"""Reasoning: the type of a chain-of-thought ``reasoning`` output field."""

from __future__ import annotations

from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

__all__ = ["Reasoning"]


class Reasoning(str):
    """The model's step-by-step reasoning: a ``str`` (it compares equal to its text, and pickles,
    serialises and validates as a plain string) that also records where it came from.

    ``native`` is True when the text is the provider's own reasoning content
    (:attr:`sigform.lm.interface.Completion.reasoning`, models that think natively) rather than
    a field the model wrote in its answer; :meth:`from_completion` builds one that way.
    Adapters that see a ``Reasoning`` output field can skip asking for it in the prompt when
    ``lm.supports("reasoning")`` and fill it from the completion instead.
    """

    native: bool

    def __new__(cls, text: str = "", *, native: bool = False) -> Reasoning:
        if not isinstance(text, str):
            raise TypeError(f"Reasoning text must be a str, got {type(text).__name__}")
        self = super().__new__(cls, text)
        self.native = native
        return self

    @classmethod
    def from_completion(cls, completion: object) -> Reasoning | None:
        """The native reasoning of a :class:`~sigform.lm.interface.Completion`, or ``None`` when
        the model returned none."""
        text = getattr(completion, "reasoning", None)
        return None if not text else cls(text, native=True)

    @property
    def text(self) -> str:
        """The reasoning as a plain ``str``."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Reasoning({str.__repr__(self)}{', native=True' if self.native else ''})"

    # -- value-engine hooks (see sigform.types): reasoning is plain text ----------------------

    @classmethod
    def __sigform_coerce__(cls, value: object) -> Reasoning:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            return cls(value)
        raise TypeError(f"reasoning must be text, got {type(value).__name__}")

    def __sigform_render__(self) -> str:
        return self.text

    @classmethod
    def __sigform_describe__(cls) -> Any:
        from sigform.types.describe import TypeDescription

        return TypeDescription("str", "Reasoning")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.text, self.native))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # keep an existing Reasoning (and its ``native`` flag) as is; wrap any other string
        return core_schema.no_info_wrap_validator_function(
            _validate_reasoning,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str.__str__, when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string"}


def _validate_reasoning(value: object, validate: core_schema.ValidatorFunctionWrapHandler) -> Reasoning:
    return value if isinstance(value, Reasoning) else Reasoning(validate(value))


def _rebuild(text: str, native: bool) -> Reasoning:
    return Reasoning(text, native=native)
