"""``Predict``: a signature turned into a callable program.

::

    qa = sf.Predict("question -> answer: str, confidence: float", demos=[...], temperature=0)
    pred = qa(question="Capital of France?")
    pred.answer, pred.confidence

Per-call overrides: ``qa(question=..., lm=..., adapter=..., demos=[...], config={"n": 3})``.
Resolution order, first found wins: the call, the program, ``sigform.context(...)``,
``sigform.configure(...)``, then the defaults (``sigform.LM()``, the embedded local model;
``AutoAdapter()``). LM keyword arguments merge: the program's, then the call's ``config``.

Inputs are validated before any LM call (see :mod:`sigform.predict.inputs`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, Union, overload

from sigform.adapters.call_plan import AdapterCall
from sigform.errors import InputError, ParseError, SignatureError
from sigform.predict import context_vars
from sigform.predict.example import Example, as_examples
from sigform.predict.inputs import InputChecker, check_options
from sigform.predict.module import Module
from sigform.predict.persistence import public_options
from sigform.settings import check_component, get_setting
from sigform.signatures import DynamicSignature, Signature, SignatureMeta, make_signature
from sigform.signatures.prediction import Prediction, PredictionMeta

if TYPE_CHECKING:
    from sigform.adapters.base import Adapter
    from sigform.hooks import Callback
    from sigform.lm.interface import LMProtocol
    from sigform.predict.streaming import StreamEvent

__all__ = ["Predict", "SignatureLike", "default_adapter", "default_lm", "ensure_signature"]

# what a program accepts as its signature: a class, "question -> answer: int", or a dict of fields
SignatureLike = Union[str, type[Signature], Mapping[str, Any]]

_defaults_lock = threading.Lock()
_default_lm: Any = None
_default_adapter: object = None


def default_lm() -> Any:
    """The process-wide fallback LM: ``sigform.LM()`` (the embedded local model), created once."""
    global _default_lm
    if _default_lm is None:
        from sigform.lm import LM

        with _defaults_lock:
            if _default_lm is None:
                _default_lm = LM()
    return _default_lm


def default_adapter() -> Any:
    """The process-wide fallback adapter: one shared ``AutoAdapter()`` (constrained JSON where
    the LM constrains decoding, chat sections elsewhere)."""
    global _default_adapter
    if _default_adapter is None:
        from sigform.adapters import AutoAdapter  # before the lock, as in default_lm

        with _defaults_lock:
            if _default_adapter is None:
                _default_adapter = AutoAdapter()
    return _default_adapter


def ensure_signature(signature: object) -> type[Signature]:
    """A signature class from a class, a string (``"question -> answer"``) or a dict of fields
    (anything else: a SignatureError saying what was given)."""
    if isinstance(signature, type) and issubclass(signature, Signature):
        if not signature.output_fields:
            raise SignatureError(f"{signature.__name__} has no output fields; it cannot be used by a program")
        return signature
    if isinstance(signature, (str, Mapping)):
        return make_signature(signature)
    raise SignatureError(
        f"a program needs a Signature class, a string like 'question -> answer' or a dict of fields; "
        f"got {type(signature).__name__}"
    )


def result_type(signature: SignatureLike) -> type[Prediction]:
    """What a program built from ``signature`` returns: instances of the signature class itself
    (typed by it), or plain Predictions for a string or a dict."""
    return signature if isinstance(signature, SignatureMeta) else Prediction


# A program's types: its inputs (the signature class's constructor parameters) and what a call returns
_In = ParamSpec("_In")
_Out = TypeVar("_Out", bound=Prediction)


def _count_failed(error: ParseError) -> None:
    """A call that ended in a ParseError still spent its requests: count them for usage trackers."""
    if error.usage is not None:
        context_vars.add_usage(error.usage, error.attempts or 1)


class Predict(Module, Generic[_In, _Out]):
    """A program that asks an LM to fill a signature's outputs from its inputs.

    Built from a signature class ``Answer``, it is a ``Predict[..., Answer]`` to type checkers: a
    call returns an ``Answer`` whose outputs have their declared types, and the input keywords are
    checked against the signature (``program(question=...)``; with per-call options,
    ``program(Answer(question=...), lm=...)``). Built from a string or a dict, a call returns an
    untyped :class:`Prediction`.

    Args:
        signature: a Signature class, a string (``"question -> answer: int"``) or a dict.
        demos: few-shot examples (:class:`Example` or plain dicts with input and output values).
        lm: the model for this program (else settings, else ``sigform.LM()``).
        adapter: how prompts are written and answers parsed (else settings, else ``AutoAdapter``).
        callbacks: hooks for this program's calls (see :mod:`sigform.hooks`): active while it runs,
            they see its module events and every LM, adapter and tool event inside it, each once.
        **lm_kwargs: LM request options for every call (``temperature=0``, ``n=3``, ...).
    """

    @overload
    def __init__(
        self: Predict[..., Prediction],
        signature: str | Mapping[str, object] | type[DynamicSignature],
        *,
        demos: Sequence[Example | Mapping[str, object]] | None = None,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        callbacks: Sequence[Callback] | None = None,
        **lm_kwargs: object,
    ) -> None: ...
    @overload
    def __init__(
        self: Predict[_In, _Out],
        signature: Callable[_In, _Out],
        *,
        demos: Sequence[Example | Mapping[str, object]] | None = None,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        callbacks: Sequence[Callback] | None = None,
        **lm_kwargs: object,
    ) -> None: ...
    def __init__(
        self,
        signature: SignatureLike | Callable[_In, _Out],
        *,
        demos: Sequence[Example | Mapping[str, object]] | None = None,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        callbacks: Sequence[Callback] | None = None,
        **lm_kwargs: object,
    ) -> None:
        self.signature = ensure_signature(signature)
        self._result: type[_Out] = result_type(signature)  # type: ignore[arg-type, assignment]
        self.demos = demos  # the setter turns dicts into Examples
        self.lm = lm
        self.adapter = adapter
        self.callbacks = list(callbacks) if callbacks else None
        where = type(self).__name__
        check_component("lm", lm, where)
        check_component("adapter", adapter, where)
        if lm_kwargs:
            check_options(type(self), lm_kwargs)
        self.config: dict[str, Any] = dict(lm_kwargs)
        # chooses extra demos per call from the inputs (nearest neighbours: sigform.optimize.KNNDemos)
        self.demo_selector: Any = None

    # The signature is a property so that replacing it (an optimizer rewriting instructions,
    # load()) also rebuilds the input checker that belongs to it.
    @property
    def signature(self) -> type[Signature]:
        return self._signature

    @signature.setter
    def signature(self, value: object) -> None:
        sig = ensure_signature(value)
        self._signature = sig
        self._checker = InputChecker(sig)

    @property
    def demos(self) -> list[Example]:
        """Few-shot examples; assigning a list of dicts stores Examples."""
        return self._demos

    @demos.setter
    def demos(self, value: Sequence[Example | Mapping[str, object]] | None) -> None:
        demos = as_examples(value, f"{type(self).__name__}({self.signature.__name__}): demo")
        for index, demo in enumerate(demos):  # checked as inputs are: a wrong value is not sent
            self._checker.check_demo(index, demo._store)
        self._demos = demos

    if TYPE_CHECKING:
        # What type checkers see of a call (Module.__call__ runs it): the signature's inputs as
        # keywords; or its instance, ``program(Answer(question=...), lm=...)``, with per-call
        # options; or those options with unchecked input keywords (each overload needs one option,
        # so that a misspelled input without options is still reported)
        @overload  # type: ignore[override]
        def __call__(self, *args: _In.args, **kwargs: _In.kwargs) -> _Out: ...
        @overload
        def __call__(
            self,
            inputs: _Out,
            /,
            *,
            lm: LMProtocol | None = None,
            adapter: Adapter | None = None,
            demos: Sequence[Example | Mapping[str, object]] | None = None,
            config: Mapping[str, object] | None = None,
        ) -> _Out: ...
        @overload
        def __call__(
            self,
            *,
            lm: LMProtocol,
            adapter: Adapter | None = None,
            demos: Sequence[Example | Mapping[str, object]] | None = None,
            config: Mapping[str, object] | None = None,
            **inputs: object,
        ) -> _Out: ...
        @overload
        def __call__(
            self,
            *,
            adapter: Adapter,
            demos: Sequence[Example | Mapping[str, object]] | None = None,
            config: Mapping[str, object] | None = None,
            **inputs: object,
        ) -> _Out: ...
        @overload
        def __call__(
            self,
            *,
            demos: Sequence[Example | Mapping[str, object]],
            config: Mapping[str, object] | None = None,
            **inputs: object,
        ) -> _Out: ...
        @overload
        def __call__(self, *, config: Mapping[str, object], **inputs: object) -> _Out: ...
        def __call__(self, *args: object, **kwargs: object) -> _Out:
            raise NotImplementedError

    # -- resolution -----------------------------------------------------------------------------
    def _resolve(
        self,
        inputs: Mapping[str, object],
        lm: LMProtocol | None,
        adapter: Adapter | None,
        demos: Sequence[Any] | None,
        config: Mapping[str, object] | None,
    ) -> tuple[Adapter, AdapterCall]:
        """The adapter that runs one call, and the call: the checked inputs, the LM, the demos,
        the signature and the request options, each from the call, else the program, else
        settings."""
        checked = self._checker.check(inputs)  # before anything else: no LM is built for bad input
        if lm is not None or adapter is not None:  # given for this call: checked as set ones are
            check_component("lm", lm, f"{self.signature.__name__} call")
            check_component("adapter", adapter, f"{self.signature.__name__} call")
        if lm is None:
            lm = self.lm
            if lm is None:
                lm = get_setting("lm")
                if lm is None:
                    lm = default_lm()
        if adapter is None:
            adapter = self.adapter
            if adapter is None:
                adapter = get_setting("adapter")
                if adapter is None:
                    adapter = default_adapter()
        if demos is None:
            demo_list = self.demos
        else:
            demo_list = as_examples(demos, f"{self.signature.__name__}: per-call demo")
        if demos is None and self.demo_selector is not None:
            demo_list = [*demo_list, *self.demo_selector.select(checked)]
        # the adapter only reads demos; hand it the underlying dicts without copying
        demo_data: list[Mapping[str, object]] = [d._store if isinstance(d, Example) else d for d in demo_list]
        rollout = context_vars.rollout_kwargs()
        # the common case (no overrides) passes the program's own options without a merge
        kwargs = {**self.config, **(rollout or {}), **(config or {})} if rollout or config else self.config
        signature = self._call_signature(lm)
        hint = context_vars.current_hint()
        if hint:
            signature = signature.with_instructions(f"{signature.instructions}\n\n{hint}")
        return adapter, AdapterCall(lm, signature, demo_data, checked, kwargs)

    def _call_signature(self, lm: object) -> type[Signature]:
        """The signature sent to the adapter (ChainOfThought may drop its reasoning field)."""
        return self._signature

    # -- running --------------------------------------------------------------------------------
    def forward(
        self,
        *args: object,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        demos: Sequence[object] | None = None,
        config: Mapping[str, object] | None = None,
        **inputs: object,
    ) -> _Out:
        """Run the program once; inputs are keyword arguments named after the input fields, or one
        instance of the signature class (``program(Answer(question=...))``)."""
        if args:
            inputs = self._positional_inputs(args, inputs)
        adapter, call = self._resolve(inputs, lm, adapter, demos, config)
        try:
            result = adapter.run_call(call)
        except ParseError as exc:
            _count_failed(exc)
            raise
        return self._prediction(result, call.lm)

    async def aforward(
        self,
        *args: object,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        demos: Sequence[object] | None = None,
        config: Mapping[str, object] | None = None,
        **inputs: object,
    ) -> _Out:
        """Async :meth:`forward`: uses the adapter's native ``arun`` (no thread hop)."""
        if args:
            inputs = self._positional_inputs(args, inputs)
        adapter, call = self._resolve(inputs, lm, adapter, demos, config)
        try:
            result = await adapter.arun_call(call)
        except ParseError as exc:
            _count_failed(exc)
            raise
        return self._prediction(result, call.lm)

    def _positional_inputs(self, args: tuple[object, ...], inputs: Mapping[str, object]) -> dict[str, object]:
        """The inputs of ``program(Answer(question=...))``: one signature instance, no keywords."""
        if len(args) == 1 and isinstance(args[0], Signature) and not inputs:
            return args[0].to_dict()
        names = ", ".join(f"{n}=..." for n in self._signature.input_fields)
        raise InputError(
            f"{type(self).__name__} takes inputs as keyword arguments ({names}) or one instance of its "
            f"signature class; got {len(args)} positional argument(s) "
            f"({', '.join(type(a).__name__ for a in args)}). To run an Example or dict, use "
            "program(**example.inputs()) or program.batch()."
        )

    def _prediction(self, result: Any, lm: object) -> _Out:
        usage = result.usage
        context_vars.add_usage(usage, getattr(result, "attempts", 1) or 1)
        names = getattr(result, "adapter_names", None) or ()
        adapter_name = ">".join(names) if not isinstance(names, str) else names
        attempts = getattr(result, "attempts", 1)
        messages = getattr(result, "messages", None)
        mode = "text" if getattr(lm, "model_type", "chat") == "text" else "chat"
        candidates = []
        unstated = getattr(result, "unstated", None) or [()] * len(result.outputs)
        for values, completion, nulled in zip(result.outputs, result.completions, unstated, strict=True):
            meta = PredictionMeta(
                raw=completion.text,
                usage=usage,
                adapter=adapter_name or None,
                attempts=attempts,
                completion=completion,
                messages=messages,
                model=completion.model or getattr(lm, "model", None),
                mode=mode,
                unstated=nulled,
            )
            finished = self._finish_values(values, completion, lm)
            # the adapter hands over a fresh dict per candidate: keep it rather than copy it
            store = finished if type(finished) is dict else dict(finished)
            candidates.append(self._result._make(store, meta))
        return self._result.from_candidates(candidates)

    def _finish_values(
        self, values: Mapping[str, object], completion: object, lm: object
    ) -> Mapping[str, object]:
        """Hook for subclasses to adjust one candidate's values (ChainOfThought's native reasoning)."""
        return values

    # -- streaming ------------------------------------------------------------------------------
    def stream(
        self,
        *,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        demos: Sequence[object] | None = None,
        config: Mapping[str, object] | None = None,
        **inputs: object,
    ) -> Iterator[StreamEvent | _Out]:
        """Yield field events (which output is being written, its text so far), then the Prediction.

        Takes the per-call ``lm=``, ``adapter=``, ``demos=`` and ``config=`` of a plain call."""
        from sigform.predict.streaming import Overrides, stream_predict

        return stream_predict(self, inputs, Overrides(lm, adapter, demos, config))

    def astream(
        self,
        *,
        lm: LMProtocol | None = None,
        adapter: Adapter | None = None,
        demos: Sequence[object] | None = None,
        config: Mapping[str, object] | None = None,
        **inputs: object,
    ) -> AsyncIterator[StreamEvent | _Out]:
        """Async :meth:`stream` (same per-call options)."""
        from sigform.predict.streaming import Overrides, astream_predict

        return astream_predict(self, inputs, Overrides(lm, adapter, demos, config))

    # -- state ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget learned demos (and any demo selector)."""
        self.demos = []
        self.demo_selector = None

    def __repr__(self) -> str:
        extras = []
        if self.demos:
            extras.append(f"demos={len(self.demos)}")
        if self.demo_selector is not None:
            extras.append(f"demo_selector={self.demo_selector!r}")
        if self.lm is not None:
            extras.append(f"lm={getattr(self.lm, 'model', type(self.lm).__name__)!r}")
        shown = public_options(self.config)
        if shown:
            extras.append(", ".join(f"{k}={v!r}" for k, v in shown.items()))
        tail = (", " + ", ".join(extras)) if extras else ""
        return f"{type(self).__name__}({self._signature.signature!r}{tail})"
