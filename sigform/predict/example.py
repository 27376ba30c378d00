"""``Example``: one record of named values (demo data, a dataset row, a batch input).

Field values are read by attribute (``ex.question``) or item (``ex["question"]``). The object keeps
its own API to the few names signatures reserve (``with_inputs``, ``to_dict``, ``copy``), so an
attribute never shadows a field; item access works for every name. Plain dicts are accepted
everywhere an example is. An Example is also a mapping: ``program(**ex.inputs())``, ``dict(ex)``
and ``{**ex}`` work; ``keys()`` is always the method (a field named ``keys`` is ``ex["keys"]``),
while ``items``, ``values`` and ``get``, like ``inputs`` and ``labels``, are the field when the
example has one (then call ``Example.items(ex)``).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, KeysView, Mapping, ValuesView
from typing import Any, Literal

from sigform.errors import InputError, NoSuchField
from sigform.excerpt import shorten
from sigform.signatures.display import record_html, record_repr, record_rich
from sigform.signatures.prediction import Record

__all__ = ["Example", "as_example"]

_Part = Literal["all", "inputs", "labels"]


class _FieldOrMethod:
    """A method that a field of the same name wins over on instances (``ex.labels`` is the field
    when the example has one), so that no attribute ever shadows a field; the method is still
    reachable as ``Example.labels(ex)``."""

    def __init__(self, func: Any) -> None:
        self._func = func
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self._func
        store = obj._store
        if self._name in store:
            return store[self._name]
        return self._func.__get__(obj, owner)


class Example(Record):
    """Named values, e.g. one demo or dataset row: ``Example(question="2+2?", answer="4")``.

    ``with_inputs("question")`` marks which keys are inputs (the rest are labels); programs'
    ``batch`` then passes only the inputs. ``ex.inputs()`` / ``ex.labels()`` are Examples of
    either part, ``to_dict("inputs")`` / ``to_dict("labels")`` the same as dicts. (An example
    with a field named ``inputs`` or ``labels`` reads the field by attribute, like every field:
    call ``Example.inputs(ex)`` / ``Example.labels(ex)`` there.)
    """

    __slots__ = ("_input_keys",)

    def __init__(self, data: Mapping[str, object] | Record | None = None, /, **values: object) -> None:
        super().__init__(data, **values)
        keys = data._input_keys if isinstance(data, Example) else None
        object.__setattr__(self, "_input_keys", keys)

    @property
    def _inputs_marked(self) -> bool:
        return self._input_keys is not None

    def with_inputs(self, *keys: str) -> Example:
        """A copy whose input keys are ``keys`` (each must be present)."""
        missing = [k for k in keys if k not in self._store]
        if missing:  # a KeyError naming the closest key
            raise NoSuchField(type(self).__name__, missing[0], tuple(self._store))
        new = self.copy()
        object.__setattr__(new, "_input_keys", tuple(keys))
        return new

    def to_dict(self, part: _Part = "all") -> dict[str, Any]:
        """A plain dict: every value (``"all"``), only the marked inputs, or only the labels."""
        if part == "all":
            return dict(self._store)
        if self._input_keys is None:
            raise ValueError("this Example has no input keys marked; call .with_inputs(...) first")
        inputs = set(self._input_keys)
        if part == "inputs":
            return {k: v for k, v in self._store.items() if k in inputs}
        if part == "labels":
            return {k: v for k, v in self._store.items() if k not in inputs}
        raise ValueError(f"part must be 'all', 'inputs' or 'labels', got {part!r}")

    @_FieldOrMethod
    def inputs(self) -> Example:
        """An Example of only the marked input values (still marked as inputs)."""
        values = self.to_dict("inputs")
        new = Example(values)
        object.__setattr__(new, "_input_keys", tuple(k for k in self._input_keys or () if k in values))
        return new

    @_FieldOrMethod
    def labels(self) -> Example:
        """An Example of only the label values: everything that is not a marked input."""
        return Example(self.to_dict("labels"))

    # -- a mapping: program(**ex.inputs()), dict(ex), {**ex} --------------------------------------
    def keys(self) -> KeysView[str]:
        """The field names. Always this method (``**ex`` and ``dict(ex)`` call it): a field named
        ``keys`` is read as ``ex["keys"]``."""
        return self._store.keys()

    @_FieldOrMethod
    def values(self) -> ValuesView[Any]:
        """The values, in field order."""
        return self._store.values()

    @_FieldOrMethod
    def items(self) -> ItemsView[str, Any]:
        """``(name, value)`` pairs, in field order."""
        return self._store.items()

    @_FieldOrMethod
    def get(self, key: str, default: object = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._store.get(key, default)

    def copy(self, **changes: object) -> Example:
        """A shallow copy, optionally with some values changed; input keys are kept."""
        new = Example(self._store, **changes)
        object.__setattr__(new, "_input_keys", self._input_keys)
        return new

    def __eq__(self, other: object) -> bool:
        result = super().__eq__(other)
        if result is True and isinstance(other, Example):
            return bool(self._input_keys == other._input_keys)
        return result

    __hash__ = None

    def __repr__(self) -> str:
        return record_repr("Example", self._store, inputs=self._input_keys)

    def _repr_html_(self) -> str:
        return record_html("Example", self._store, inputs=self._input_keys)

    def __rich__(self) -> Any:
        return record_rich("Example", self._store, inputs=self._input_keys)


def as_example(item: Example | Mapping[str, object] | Record) -> Example:
    """Accept an Example or a plain mapping (or another record) wherever an example is expected."""
    if isinstance(item, Example):
        return item
    if isinstance(item, (Mapping, Record)):
        return Example(item)
    raise TypeError(f"expected an Example or a dict, got {type(item).__name__}")


def as_examples(items: Iterable[Example | Mapping[str, Any]] | None, what: str = "example") -> list[Example]:
    """A list of Examples from examples and/or dicts (None -> empty); ``what`` names one item in
    errors (``"Predict(Answer): demo"``)."""
    if items is None:
        return []
    if isinstance(items, (Mapping, Record, str)):
        raise InputError(f"{what}s: expected a list of examples, got a single {type(items).__name__}")
    out = []
    for index, item in enumerate(items):
        if not isinstance(item, (Mapping, Record)):
            raise InputError(
                f"{what} #{index} is {type(item).__name__} {shorten(repr(item), 60)}; expected an "
                "Example or a dict of field values, e.g. {'question': ..., 'answer': ...}"
            )
        out.append(as_example(item))
    return out
