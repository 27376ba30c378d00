"""``ChainOfThought``: a Predict that reasons before it answers.

The signature gains a ``reasoning`` output (type :class:`~sigform.types.Reasoning`) before the
others; default instructions are regenerated to mention it (explicit instructions are kept).

When the model reasons natively (``lm.supports("reasoning")``), the prompt does not ask for a
reasoning field: the model's own reasoning content (``Completion.reasoning``) fills
``pred.reasoning`` instead (``None`` when the provider returned none). Force a written reasoning
field with ``ChainOfThought(sig, native_reasoning=False)`` or
``sigform.configure(native_reasoning=False)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import overload

from sigform.predict.predict import Predict, SignatureLike, _In, _Out, ensure_signature, result_type
from sigform.settings import get_setting
from sigform.signatures import DynamicSignature, OutputField, Signature
from sigform.signatures.prediction import Prediction

__all__ = ["REASONING_DESC", "ChainOfThought"]

REASONING_DESC = "Think step by step to reach the answer."


class ChainOfThought(Predict[_In, _Out]):
    """A :class:`Predict` whose signature starts its outputs with ``reasoning``.

    Args:
        signature: as for :class:`Predict` (it must not already have a ``reasoning`` field).
        native_reasoning: use the model's native reasoning when it has one (default: the
            ``native_reasoning`` setting, else True); False always asks for a written field.
        reasoning_desc: the description of the added field.
        **kwargs: as for :class:`Predict` (``demos``, ``lm``, ``adapter``, LM options).

    Built from a signature class ``Answer``, a call returns an ``Answer`` (typed as for
    :class:`Predict`) that also holds the reasoning: read it as ``pred["reasoning"]``, since
    ``Answer`` does not declare it.
    """

    @overload
    def __init__(
        self: ChainOfThought[..., Prediction],
        signature: str | Mapping[str, object] | type[DynamicSignature],
        *,
        native_reasoning: bool | None = None,
        reasoning_desc: str = REASONING_DESC,
        **kwargs: object,
    ) -> None: ...
    @overload
    def __init__(
        self: ChainOfThought[_In, _Out],
        signature: Callable[_In, _Out],
        *,
        native_reasoning: bool | None = None,
        reasoning_desc: str = REASONING_DESC,
        **kwargs: object,
    ) -> None: ...
    def __init__(
        self,
        signature: SignatureLike | Callable[_In, _Out],
        *,
        native_reasoning: bool | None = None,
        reasoning_desc: str = REASONING_DESC,
        **kwargs: object,
    ) -> None:
        from sigform.types import Reasoning

        base = ensure_signature(signature)
        if "reasoning" in base.fields:
            raise ValueError(
                f"{base.__name__} already has a `reasoning` field; use Predict, or rename the field"
            )
        self.native_reasoning = native_reasoning
        extended = base.prepend("reasoning", OutputField(desc=reasoning_desc), Reasoning)
        super().__init__(extended, **kwargs)  # type: ignore[arg-type]
        self._result = result_type(signature)  # type: ignore[arg-type, assignment]

    def _use_native(self, lm: object) -> bool:
        wanted = self.native_reasoning
        if wanted is None:
            wanted = get_setting("native_reasoning", True)
        if not wanted:
            return False
        supports = getattr(lm, "supports", None)
        return bool(supports and supports("reasoning"))

    def _call_signature(self, lm: object) -> type[Signature]:
        if self._use_native(lm):
            return self._base_signature
        return self._signature

    @property
    def signature(self) -> type[Signature]:
        return self._signature

    @signature.setter
    def signature(self, value: object) -> None:
        Predict.signature.fset(self, value)  # type: ignore[attr-defined]
        sig = self._signature
        # the answer-only signature for native reasoning: same instructions, no reasoning field
        self._base_signature = sig.delete("reasoning") if "reasoning" in sig.fields else sig

    def _finish_values(
        self, values: Mapping[str, object], completion: object, lm: object
    ) -> Mapping[str, object]:
        if "reasoning" in values:
            return values
        from sigform.types import Reasoning

        return {"reasoning": Reasoning.from_completion(completion), **values}
