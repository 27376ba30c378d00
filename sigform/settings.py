"""Process-wide defaults and scoped overrides, safe across threads and asyncio tasks.

``configure(lm=..., adapter=...)`` sets defaults for the whole process; ``with context(...)``
overrides them for the current thread or task only (contextvars), so a batch worker or an
asyncio task inherits the settings of the code that started it.

Every setting is declared once, with its type, in :class:`Settings`: a misspelled name is a type
error for a checker and a :class:`~sigform.errors.ParameterError` at run time.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from os import PathLike
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from sigform.errors import ParameterError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.adapters.base import Adapter
    from sigform.conversation.pruning import Pruning
    from sigform.hooks import Callback
    from sigform.lm.interface import LMProtocol
    from sigform.tools.approval import Approver

__all__ = ["Settings", "check_component", "configure", "context", "current_settings", "get_setting"]


class Settings(TypedDict, total=False):
    """The settings, by name; each is optional (unset: the default in parentheses).

    ``lm`` / ``adapter``: what programs use when they name none (``sf.LM()``; ``AutoAdapter``);
    ``callbacks``: hook callbacks for every LM, adapter and program event; ``cache``: the LM
    response cache on or off (on); ``cache_dir``, ``cache_disk`` (on), ``cache_size_limit``,
    ``cache_memory_entries``: where and how big the cache is (see :mod:`sigform.lm.cache`);
    ``prompt_cache`` / ``prune``: the defaults of the request options of the same names (see
    :mod:`sigform.conversation`); ``native_reasoning``: ChainOfThought uses a model's own
    reasoning where it has one (on); ``unknown_inputs``: ``"error"``, ``"warn"`` or ``"ignore"``
    an input the signature does not have ("error"); ``num_threads`` / ``max_errors``: batch
    width and failures tolerated; ``approver`` / ``parallel_tools``: an agent's tool approvals
    and whether its tool calls run at once."""

    lm: LMProtocol | None
    adapter: Adapter | None
    callbacks: Sequence[Callback]
    cache: bool
    cache_dir: str | PathLike[str] | None
    cache_disk: bool
    cache_size_limit: int | None
    cache_memory_entries: int | None
    prompt_cache: bool
    prune: Pruning | Mapping[str, Any] | bool | None
    native_reasoning: bool
    unknown_inputs: Literal["error", "warn", "ignore"]
    num_threads: int | None
    max_errors: int | None
    approver: Approver | None
    parallel_tools: bool


SettingName = Literal[
    "lm",
    "adapter",
    "callbacks",
    "cache",
    "cache_dir",
    "cache_disk",
    "cache_size_limit",
    "cache_memory_entries",
    "prompt_cache",
    "prune",
    "native_reasoning",
    "unknown_inputs",
    "num_threads",
    "max_errors",
    "approver",
    "parallel_tools",
]

_NAMES = frozenset(Settings.__annotations__)

_global: dict[str, object] = {}
_global_lock = threading.Lock()
_overrides: contextvars.ContextVar[Mapping[str, object]] = contextvars.ContextVar(
    "sigform_settings", default=MappingProxyType({})
)


def _checked(settings: Mapping[str, object], where: str) -> Mapping[str, object]:
    unknown = [name for name in settings if name not in _NAMES]
    if unknown:
        import difflib  # only on this error path

        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, sorted(_NAMES), n=1, cutoff=0.75)
            hints.append(f"`{name}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
        raise ParameterError(
            f"{where}: unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; the settings "
            f"are {', '.join(f'`{n}`' for n in Settings.__annotations__)}. A request option (temperature, "
            "max_tokens, ...) goes to the LM (sf.LM(model, temperature=0)) or a program's config={...}"
        )
    for name, value in settings.items():
        check_component(name, value, where)
        check_value(name, value, where)
    return settings


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _count(least: int, optional: bool = True) -> Any:
    def check(value: object) -> bool:
        if value is None:
            return optional
        return isinstance(value, int) and not isinstance(value, bool) and value >= least

    return check


# what a plain setting's value must be, and that in words (`cache="no"` was truthy: the cache
# stayed on; `cache_dir=5` failed at the first call, far away)
_VALUES: dict[str, tuple[Any, str]] = {
    "cache": (_flag, "True or False"),
    "cache_disk": (_flag, "True or False"),
    "prompt_cache": (_flag, "True or False"),
    "native_reasoning": (_flag, "True or False"),
    "parallel_tools": (_flag, "True or False"),
    "cache_dir": (lambda v: v is None or isinstance(v, (str, PathLike)), "a folder (str, PathLike) or None"),
    "cache_size_limit": (_count(0), "a number of bytes (int >= 0) or None"),
    "cache_memory_entries": (_count(0), "a number of entries (int >= 0) or None"),
    "num_threads": (_count(1), "a positive int or None"),
    "max_errors": (_count(0), "an int >= 0 or None"),
    "unknown_inputs": (lambda v: v in ("error", "warn", "ignore"), "'error', 'warn' or 'ignore'"),
    "callbacks": (lambda v: isinstance(v, (list, tuple)), "a list of sigform.hooks.Callback objects"),
}


def check_value(name: str, value: object, where: str) -> None:
    """A clear error for a setting's value of the wrong type, naming what it takes."""
    rule = _VALUES.get(name)
    if rule is not None and not rule[0](value):
        from sigform.excerpt import shorten

        seen = f"{type(value).__name__} {shorten(repr(value), 60)}"
        raise ParameterError(f"{where}: setting `{name}` takes {rule[1]}; got {seen}")


# what an ``lm`` or ``adapter`` value must have, and how to write one
_COMPONENTS = {
    "lm": ("supports", "an LM, e.g. lm=sf.LM('openai/gpt-4o-mini')"),
    "adapter": ("run_call", "an adapter instance, e.g. adapter=sf.JSONAdapter()"),
}


def check_component(name: str, value: object, where: str) -> None:
    """A clear error for an ``lm`` / ``adapter`` value that cannot be one: a model's name, an
    adapter's name or class (each failed later, far away, as ``'str' object has no attribute
    'supports'`` or a missing argument of ``run_call``)."""
    if value is None or name not in _COMPONENTS:
        return
    attribute, example = _COMPONENTS[name]
    if isinstance(value, type) or not hasattr(value, attribute):
        what = f"{type(value).__name__} {value!r}"
        if isinstance(value, type):
            what = f"the class {value.__name__}"
        raise ParameterError(f"{where}: {name}= takes {example}; got {what[:80]}")


def configure(**settings: Unpack[Settings]) -> None:
    """Set process-wide defaults, e.g. ``configure(lm=sf.LM("openai/gpt-4o-mini"))``."""
    _checked(settings, "configure()")
    with _global_lock:
        _global.update(settings)


@contextmanager
def context(**settings: Unpack[Settings]) -> Iterator[None]:
    """Override settings inside a ``with`` block for this thread/task only."""
    _checked(settings, "context()")
    token = _overrides.set(MappingProxyType({**_overrides.get(), **settings}))
    try:
        yield
    finally:
        _overrides.reset(token)


def get_setting(name: SettingName, default: object = None) -> Any:
    """The value of ``name``: the innermost ``context`` first, then ``configure``, then ``default``."""
    scoped = _overrides.get()
    if name in scoped:
        return scoped[name]
    return _global.get(name, default)


def current_settings() -> dict[str, object]:
    """A snapshot of every effective setting (global merged with scoped overrides)."""
    with _global_lock:
        merged = dict(_global)
    merged.update(_overrides.get())
    return merged
