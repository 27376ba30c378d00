"""``Module``: the base class of every program.

Subclass it, create sub-programs in ``__init__`` and write ``forward`` (and optionally an async
``aforward``)::

    class RAG(sf.Module):
        def __init__(self):
            self.answer = sf.ChainOfThought("context: list[str], question -> answer")

        def forward(self, question):
            return self.answer(context=search(question), question=question)

``program(...)`` runs ``forward`` between ``module_start`` / ``module_end`` hook events. A
program's own ``callbacks`` are active for the whole call (see :func:`program_callbacks`): they see
every event inside it - LM requests and responses, adapter format/parse, tool calls, sub-programs -
once each, even when the same callback is also registered globally, in scope or on the LM.
``await program.acall(...)`` runs ``aforward`` when the subclass defines it; otherwise it runs
``forward`` in a worker thread (``asyncio.to_thread``, which carries settings and callbacks
along), so the event loop never blocks on a synchronous program.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

from sigform.hooks import Callback, emit
from sigform.settings import context, get_setting

if TYPE_CHECKING:
    from sigform.predict.batch import Failure
    from sigform.predict.executors import Executor
    from sigform.predict.persistence import ProgramState
    from sigform.predict.predict import Predict
    from sigform.signatures.prediction import Prediction

__all__ = ["Module", "program_callbacks"]

_call_ids = itertools.count(1)
_NO_SCOPE = nullcontext()  # a program without callbacks: no scope to open (reusable)

_Inputs = ParamSpec("_Inputs")
_Result = TypeVar("_Result")
_Result_co = TypeVar("_Result_co", covariant=True)


class _Forward(Protocol[_Inputs, _Result_co]):
    """A program seen by a type checker: calling it takes ``forward``'s parameters and returns
    what ``forward`` returns (``Predict(...)(...)`` is a Prediction, a typo'd input is reported)."""

    def forward(self, *args: _Inputs.args, **kwargs: _Inputs.kwargs) -> _Result_co: ...


@contextmanager
def program_callbacks(callbacks: Sequence[Callback] | None) -> Iterator[None]:
    """Make a program's ``callbacks`` active (the ``callbacks`` setting, for this thread or task)
    while it runs, so that every LM, adapter and tool event inside it reaches them. A callback
    already active (registered globally, in scope, or on an outer program) is not added twice,
    and an LM's own callbacks are merged without duplicates, so each event is delivered once."""
    if not callbacks:
        yield
        return
    active = list(get_setting("callbacks") or ())
    added = [cb for cb in callbacks if cb not in active]
    if not added:
        yield
        return
    with context(callbacks=[*active, *added]):
        yield


def _is_shared(value: object) -> bool:
    """Objects a deep copy of a program shares instead of copying: models, adapters, callbacks
    (they hold clients, caches and locks, and are configuration rather than program state)."""
    if isinstance(value, (Callback, type)):
        return True
    from sigform.lm.interface import LMProtocol

    if isinstance(value, LMProtocol):
        return True
    # adapters expose run/arun; duck-typed so predict does not import the adapter package here
    return callable(getattr(value, "run", None)) and callable(getattr(value, "arun", None))


class Module:
    """Base class of programs (see the module docstring)."""

    callbacks: Sequence[Callback] | None = None

    # -- running --------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The program's logic; subclasses must override it."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(...)")

    async def aforward(self, *args: Any, **kwargs: Any) -> Any:
        """Async logic; by default ``forward`` runs in a worker thread (see :meth:`acall`)."""
        return await asyncio.to_thread(self.forward, *args, **kwargs)

    def __call__(self: _Forward[_Inputs, _Result], *args: _Inputs.args, **kwargs: _Inputs.kwargs) -> _Result:
        module = cast(Module, self)
        callbacks = module.callbacks
        if not callbacks:
            return module._hooked_call(self.forward, callbacks, args, kwargs)
        with program_callbacks(callbacks):
            return module._hooked_call(self.forward, callbacks, args, kwargs)

    def _hooked_call(
        self,
        forward: Callable[..., _Result],
        callbacks: Sequence[Callback] | None,
        args: tuple[Any, ...],
        kwargs: Mapping[str, object],
    ) -> _Result:
        call_id = next(_call_ids)
        emit("module_start", callbacks=callbacks, module=self, call_id=call_id, args=args, inputs=kwargs)
        try:
            result = forward(*args, **kwargs)
        except BaseException as exc:
            emit("module_end", callbacks=callbacks, module=self, call_id=call_id, outputs=None, error=exc)
            raise
        emit("module_end", callbacks=callbacks, module=self, call_id=call_id, outputs=result, error=None)
        return result

    async def acall(
        self: _Forward[_Inputs, _Result], *args: _Inputs.args, **kwargs: _Inputs.kwargs
    ) -> _Result:
        """Run the program asynchronously (``aforward`` if defined, else ``forward`` in a thread)."""
        module = cast(Module, self)
        callbacks = module.callbacks
        result: _Result  # aforward returns what forward does (by default it runs forward)
        # the task's own context: the scope ends with the call, whatever else runs on the loop
        with program_callbacks(callbacks) if callbacks else _NO_SCOPE:
            call_id = next(_call_ids)
            emit("module_start", callbacks=callbacks, module=self, call_id=call_id, args=args, inputs=kwargs)
            try:
                result = await module.aforward(*args, **kwargs)
            except BaseException as exc:
                emit("module_end", callbacks=callbacks, module=self, call_id=call_id, outputs=None, error=exc)
                raise
            emit("module_end", callbacks=callbacks, module=self, call_id=call_id, outputs=result, error=None)
            return result

    # -- structure --------------------------------------------------------------------------------
    def named_sub_modules(self) -> list[tuple[str, Module]]:
        """Every module inside this one (itself first, as ``"self"``), with dotted attribute paths.

        Modules held in lists, tuples and dicts are found too (``"steps[0]"``, ``"tools['x']"``).
        """
        found: list[tuple[str, Module]] = []
        seen: set[int] = set()

        def visit(name: str, value: object) -> None:
            if isinstance(value, Module):
                if id(value) in seen:
                    return
                seen.add(id(value))
                found.append((name, value))
                prefix = "" if name == "self" else f"{name}."
                for key, attr in vars(value).items():
                    visit(prefix + key, attr)
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    visit(f"{name}[{i}]", item)
            elif isinstance(value, Mapping):
                for key, item in value.items():
                    visit(f"{name}[{key!r}]", item)

        visit("self", self)
        return found

    def named_predictors(self) -> list[tuple[str, Predict[..., Prediction]]]:
        """The :class:`~sigform.predict.Predict` programs inside, by attribute path.

        These are what demos are set on and what :meth:`save` writes. A bare ``Predict`` lists
        itself as ``"self"``.
        """
        from sigform.predict.predict import Predict

        return [(name, mod) for name, mod in self.named_sub_modules() if isinstance(mod, Predict)]

    def predictors(self) -> list[Predict[..., Prediction]]:
        """The Predict programs inside (see :meth:`named_predictors`)."""
        return [p for _, p in self.named_predictors()]

    def set_lm(self, lm: Any) -> None:
        """Use ``lm`` in every predictor inside this program."""
        for predictor in self.predictors():
            predictor.lm = lm

    # -- copies -----------------------------------------------------------------------------------
    def __deepcopy__(self, memo: dict[int, Any]) -> Module:
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in vars(self).items():
            object.__setattr__(new, key, value if _is_shared(value) else copy.deepcopy(value, memo))
        return new

    def deepcopy(self) -> Module:
        """An independent copy: demos, signatures and sub-programs are copied; LMs, adapters and
        callbacks are shared (they are configuration and hold clients and caches)."""
        return copy.deepcopy(self)

    def reset(self) -> None:
        """Clear what was learned: every predictor's demos."""
        for predictor in self.predictors():
            predictor.reset()

    def reset_copy(self) -> Module:
        """A deep copy with every predictor reset."""
        new = self.deepcopy()
        new.reset()
        return new

    # -- state ------------------------------------------------------------------------------------
    def dump_state(self) -> ProgramState:
        """JSON-ready state of every predictor (see :mod:`sigform.predict.persistence`)."""
        from sigform.predict.persistence import dump_program

        return dump_program(self)

    def load_state(
        self, state: Mapping[str, object], *, restore_lm: bool = False, api_key: object = None
    ) -> Module:
        """Apply state from :meth:`dump_state`, matching predictors and fields by name; returns self.
        The saved LM is used only with ``restore_lm=True`` (see :meth:`load`)."""
        from sigform.predict.persistence import load_program

        load_program(self, state, restore_lm=restore_lm, api_key=api_key)
        return self

    def save(self, path: str | Path) -> Path:
        """Write the program's state as JSON to ``path`` (signatures, demos, LM settings without
        secrets); returns the path."""
        from sigform.predict.persistence import save_program

        return save_program(self, path)

    def load(self, path: str | Path, *, restore_lm: bool = False, api_key: object = None) -> Module:
        """Read state written by :meth:`save` into this program; returns self.

        Predictors and fields are matched by name; any mismatch is a clear error. The file is
        untrusted data: it never changes which LM answers unless ``restore_lm=True``, and never
        supplies a credential (``api_key=`` does; see :mod:`sigform.predict.persistence`).
        """
        from sigform.predict.persistence import load_program_file

        load_program_file(self, path, restore_lm=restore_lm, api_key=api_key)
        return self

    # -- many inputs ------------------------------------------------------------------------------
    @overload
    def batch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        num_threads: int | None = None,
        max_errors: int | None = None,
        return_failures: Literal[False] = False,
        progress: bool | None = None,
        executor: Executor | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> list[_Result | None]: ...
    @overload
    def batch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        num_threads: int | None = None,
        max_errors: int | None = None,
        return_failures: Literal[True],
        progress: bool | None = None,
        executor: Executor | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> tuple[list[_Result | None], list[Failure]]: ...
    def batch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        num_threads: int | None = None,
        max_errors: int | None = None,
        return_failures: bool = False,
        progress: bool | None = None,
        executor: Executor | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> list[_Result | None] | tuple[list[_Result | None], list[Failure]]:
        """Run the program on many inputs in parallel threads; see :func:`sigform.predict.batch.run_batch`.

        Results are in input order; a failed example's result is None. With ``checkpoint=path``
        every finished example is recorded in that file as it completes, and a rerun with the same
        file skips them (see :mod:`sigform.predict.checkpoint`)."""
        from sigform.predict.batch import run_batch

        return run_batch(
            self,
            examples,
            num_threads=num_threads,
            max_errors=max_errors,
            return_failures=return_failures,
            progress=progress,
            executor=executor,
            checkpoint=checkpoint,
        )

    @overload
    async def abatch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        concurrency: int | None = None,
        max_errors: int | None = None,
        return_failures: Literal[False] = False,
        progress: bool | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> list[_Result | None]: ...
    @overload
    async def abatch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        concurrency: int | None = None,
        max_errors: int | None = None,
        return_failures: Literal[True],
        progress: bool | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> tuple[list[_Result | None], list[Failure]]: ...
    async def abatch(
        self: _Forward[..., _Result],
        examples: Sequence[object],
        *,
        concurrency: int | None = None,
        max_errors: int | None = None,
        return_failures: bool = False,
        progress: bool | None = None,
        checkpoint: str | PathLike[str] | None = None,
    ) -> list[_Result | None] | tuple[list[_Result | None], list[Failure]]:
        """Async twin of :meth:`batch`: ``concurrency`` calls in flight on the running loop."""
        from sigform.predict.batch import run_abatch

        return await run_abatch(
            self,
            examples,
            concurrency=concurrency,
            max_errors=max_errors,
            return_failures=return_failures,
            progress=progress,
            checkpoint=checkpoint,
        )

    # -- display ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        inner = [f"  {name}: {pred!r}" for name, pred in self.named_predictors() if name != "self"]
        if not inner:
            return f"{type(self).__name__}()"
        return f"{type(self).__name__}(\n" + "\n".join(inner) + "\n)"
