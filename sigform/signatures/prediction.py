"""``Prediction``: the typed outputs of a program call, plus how they were produced.

Outputs are read by attribute (``pred.answer``) or item (``pred["answer"]``). The object's own
names are few and reserved by signatures (``completions``, ``to_dict``, ``copy``) or start with an
underscore (``_meta``, ``_raw``, ``_usage``), so they never shadow an output field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, overload

from sigform.errors import NoSuchField
from sigform.lm.interface import Completion, Usage
from sigform.signatures.display import record_html, record_repr, record_rich

__all__ = ["Completions", "Prediction", "PredictionMeta", "Record"]


class Record:
    """Shared base of :class:`Example` and :class:`~sigform.predict.Prediction`: an ordered bag
    of named values with attribute and item access and no public attributes besides
    ``to_dict`` and ``copy`` (both reserved field names)."""

    __slots__ = ("_store",)
    _store: dict[str, Any]
    # names a DSPy user types from memory -> what to write here
    _spellings: ClassVar[Mapping[str, str]] = {"toDict": "did you mean `to_dict()`?"}

    def __init__(self, data: Mapping[str, object] | Record | None = None, /, **values: object) -> None:
        store: dict[str, object] = {}
        if data is not None:
            store.update(data._store if isinstance(data, Record) else data)
        store.update(values)
        object.__setattr__(self, "_store", store)

    # -- access --------------------------------------------------------------------------------
    def __dir__(self) -> list[str]:
        # the fields too: completion in a notebook, and Python's "Did you mean: 'answer'?" under
        # the error of a misspelled field (`pred.answr`)
        fields = (k for k in self._store if isinstance(k, str) and k.isidentifier())
        return sorted({*super().__dir__(), *fields})

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails; private/dunder names never read the store, so
        # copy/pickle probing (``__deepcopy__``, ``__getstate__``) behaves normally
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._store[name]
        except KeyError:
            fields = ", ".join(self._store) or "(none)"
            hint = self._spellings.get(name)
            if hint:
                raise AttributeError(f"{type(self).__name__}.{name}: {hint} (fields: {fields})") from None
            raise AttributeError(f"{type(self).__name__} has no field {name!r}; fields: {fields}") from None

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self._store[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self._store[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        try:
            return self._store[key]
        except KeyError:
            raise NoSuchField(type(self).__name__, key, tuple(self._store)) from None

    def __setitem__(self, key: str, value: object) -> None:
        self._store[key] = value

    def __delitem__(self, key: str) -> None:
        del self._store[key]

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return type(self) is type(other) and self._store == other._store
        if isinstance(other, Mapping):
            return self._store == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __getstate__(self) -> dict[str, Any]:
        return {
            slot: getattr(self, slot) for cls in type(self).__mro__ for slot in getattr(cls, "__slots__", ())
        }

    def __setstate__(self, state: Mapping[str, object]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    # -- API (reserved names only) --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` of the values (a shallow copy)."""
        return dict(self._store)

    # -- display ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return record_repr(type(self).__name__, self._store)

    def _repr_html_(self) -> str:
        return record_html(type(self).__name__, self._store)

    def __rich__(self) -> Any:
        return record_rich(type(self).__name__, self._store)



@dataclass(slots=True)  # not frozen: a frozen dataclass costs ~2us more per prediction
class PredictionMeta:
    """How a prediction was produced.

    ``raw`` is the model's completion text; ``usage`` the tokens of the whole request (all
    candidates); ``adapter`` the adapter(s) that produced it (e.g. ``"ChatAdapter"`` or
    ``"ChatAdapter>JSONAdapter"`` after a fallback); ``attempts`` how many LM requests it took;
    ``completion`` the raw :class:`~sigform.lm.interface.Completion`; ``messages`` what was sent;
    ``model`` the model that answered; ``mode`` how it was asked: ``"chat"`` (chat completions)
    or ``"text"`` (a plain-text document to text completions: a base model, see
    :mod:`sigform.lm.text_mode`); ``unstated`` the outputs set to ``None`` in text mode because the
    inputs do not state the model's value (see :mod:`sigform.adapters.grounding`). Treat it as
    read-only.
    """

    raw: str | None = None
    usage: Usage = field(default_factory=Usage)
    adapter: str | None = None
    attempts: int = 1
    completion: Completion | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    model: str | None = None
    mode: str = "chat"
    unstated: tuple[str, ...] = ()


_NO_META = PredictionMeta()

_P = TypeVar("_P", bound="Prediction")


class Prediction(Record):
    """Typed outputs of one program call (see the module docstring).

    For ``n > 1`` requests, ``pred.completions`` holds every candidate; the prediction's own
    fields are the first candidate's. ``pred.completions.answer`` lists one field across them.
    """

    __slots__ = ("_completions", "_meta")
    _completions: tuple[Prediction, ...] | None
    _meta: PredictionMeta
    _spellings: ClassVar[Mapping[str, str]] = {
        **Record._spellings,
        **dict.fromkeys(
            ("inputs", "labels", "with_inputs"),
            "a Prediction holds a program's outputs; inputs(), labels() and with_inputs() are "
            "Example methods: sf.Example(pred.to_dict()) makes one",
        ),
    }

    def __init__(
        self,
        data: Mapping[str, object] | Record | None = None,
        /,
        *,
        _meta: PredictionMeta | None = None,
        _completions: Sequence[Prediction] | None = None,
        **values: object,
    ) -> None:
        super().__init__(data, **values)
        object.__setattr__(self, "_meta", _meta if _meta is not None else _NO_META)
        object.__setattr__(self, "_completions", tuple(_completions) if _completions else None)

    @classmethod
    def from_candidates(cls: type[_P], candidates: Sequence[_P]) -> _P:
        """The prediction for a call with one or more candidates (the first one leads)."""
        if not candidates:
            raise ValueError("a prediction needs at least one candidate")
        first = candidates[0]
        if len(candidates) == 1:
            return first
        return cls._make(first._store, first._meta, tuple(candidates))

    @classmethod
    def _make(
        cls: type[_P],
        store: Mapping[str, object],
        meta: PredictionMeta,
        completions: tuple[Prediction, ...] | None = None,
    ) -> _P:
        """Build without copying ``store`` (the hot path of every program call)."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "_store", store)
        object.__setattr__(obj, "_meta", meta)
        object.__setattr__(obj, "_completions", completions)
        return obj

    # -- API ------------------------------------------------------------------------------------
    @property
    def completions(self) -> Completions:
        """Every candidate of the call (one unless ``n > 1`` was requested)."""
        return Completions(self._completions or (self,))

    def copy(self: _P, **changes: object) -> _P:
        """A shallow copy of the same class, optionally with some values changed (metadata is kept)."""
        return self._make({**self._store, **changes}, self._meta, self._completions)

    def __eq__(self, other: object) -> bool:
        # a typed prediction (an instance of its signature class) equals a plain one with the same values
        if isinstance(other, Prediction):
            return self._store == other._store
        return super().__eq__(other)

    __hash__ = None  # mutable

    @property
    def _raw(self) -> str | None:
        """The model's raw completion text."""
        return self._meta.raw

    @property
    def _usage(self) -> Usage:
        """Token usage of the request that produced this prediction."""
        return self._meta.usage

    # -- display --------------------------------------------------------------------------------
    def _footer(self) -> str:
        meta = self._meta
        parts = []
        if meta.adapter:
            parts.append(f"adapter={meta.adapter}")
        if meta.model:
            parts.append(f"model={meta.model}")
        if meta.attempts != 1:
            parts.append(f"attempts={meta.attempts}")
        if meta.usage.total_tokens:
            parts.append(f"tokens={meta.usage.total_tokens}")
        if self._completions:
            parts.append(f"candidates={len(self._completions)}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        extra = f", <{len(self._completions)} completions>" if self._completions else ""
        return record_repr("Prediction", self._store, extra=extra)

    def _repr_html_(self) -> str:
        return record_html("Prediction", self._store, footer=self._footer())

    def __rich__(self) -> Any:
        return record_rich("Prediction", self._store, footer=self._footer())


class Completions:
    """The candidates of one call: ``completions[0]`` is a :class:`Prediction`,
    ``completions.answer`` (or ``completions["answer"]``) the list of one field's values.

    A registered :class:`~collections.abc.Sequence` that does not inherit ``count``/``index``,
    so fields of those names are read like any other."""

    __slots__ = ("_items",)

    def __init__(self, items: Sequence[Prediction]) -> None:
        self._items = tuple(items)

    @overload
    def __getitem__(self, key: int) -> Prediction: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[Prediction]: ...
    @overload
    def __getitem__(self, key: str) -> list[Any]: ...
    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if not self._items or key not in self._items[0]:
                raise KeyError(key)
            return [item[key] for item in self._items]
        return self._items[key]

    def __getattr__(self, name: str) -> list[Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"completions have no field {name!r}") from None

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Prediction]:
        return iter(self._items)

    def __reversed__(self) -> Iterator[Prediction]:
        return reversed(self._items)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __repr__(self) -> str:
        return f"Completions({list(self._items)!r})"


Sequence.register(Completions)
