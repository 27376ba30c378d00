"""Checking a program's inputs before any LM call.

The rule: a value of the field's type passes; a value that converts to it *without loss* is
converted; anything else is an :class:`~sigform.errors.InputError` naming the field, the expected
type and what was seen. Lossless conversions: a number for a ``str`` field becomes its text
(``42`` -> ``"42"``: string signatures default every field to ``str``), a numeric string for a
number (``"5"`` -> ``5``), an ``int`` for a ``float``, a whole float for an ``int`` (``3.0``), a tuple
or set for a list, a dict for a model, an ISO string for a date. Refused: a bool for a number
(``True`` is no count, also inside lists and dicts), a fraction for an ``int``, a list, dict or
``None`` for a ``str``, prose for a number. (pydantic's lax mode, with numbers allowed for ``str``
and bools refused for numbers.) The validated value is what the adapter renders.

Missing inputs are an error unless the field's type accepts ``None`` (then ``None`` is passed).
Unknown inputs (usually a typo) are an error; ``sigform.configure(unknown_inputs="warn")`` turns
that into a warning (the value is dropped), ``"ignore"`` drops it silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from sigform.errors import InputError, ParameterError, SigformError
from sigform.excerpt import shorten
from sigform.probes import probe
from sigform.settings import get_setting
from sigform.signatures import FieldSpec
from sigform.types.unicode_text import lone_surrogate

__all__ = ["InputChecker", "check_options"]

_MISSING = object()
Validator = Callable[[Any], Any]


def _type_label(annotation: object) -> str:
    # the value engine may not know the type: a plain name is enough
    plain = getattr(annotation, "__name__", None) or repr(annotation)
    return probe("type name", lambda: _type_name(annotation), plain)


def _type_name(annotation: object) -> str:
    from sigform.types import type_name

    return type_name(annotation)


def _build_validator(spec: FieldSpec) -> tuple[Validator, bool]:
    """``(validate, accepts_none)`` for one input field."""
    from pydantic import ConfigDict, PydanticSchemaGenerationError, PydanticUserError, TypeAdapter

    annotation = spec.validation_annotation
    try:
        adapter = TypeAdapter(annotation, config=ConfigDict(coerce_numbers_to_str=True))
    except PydanticUserError:  # models/dataclasses carry their own config
        adapter = TypeAdapter(annotation)
    except PydanticSchemaGenerationError:
        adapter = None
    if adapter is None:  # an arbitrary class pydantic cannot describe: an isinstance check
        if isinstance(annotation, type):

            def check(value: object) -> object:
                if not isinstance(value, annotation):
                    raise ValueError(f"expected an instance of {annotation.__name__}")
                return value

            return check, False
        return (lambda value: value), True
    accepts_none = probe("does the input type accept None", lambda: _accepts(adapter, None), False)
    return adapter.validate_python, accepts_none


def _bool_as_number(value: object, result: object) -> bool:
    """Whether lax validation turned a ``True``/``False`` into a number (``1``, ``0.0``): a bool
    for a number field is almost always a mistake, and it would be sent as 1 without a word."""
    if isinstance(value, bool):
        return isinstance(result, (int, float)) and not isinstance(result, bool)
    if isinstance(value, (str, int, float)):  # nothing inside: no ABC check below
        return False
    if isinstance(value, (list, tuple)) and isinstance(result, (list, tuple)) and len(value) == len(result):
        return any(_bool_as_number(v, r) for v, r in zip(value, result, strict=True))
    if isinstance(value, Mapping) and isinstance(result, Mapping):
        return any(_bool_as_number(v, result[k]) for k, v in value.items() if k in result)
    return False


def _accepts(adapter: Any, value: object) -> bool:
    adapter.validate_python(value)
    return True


def _first_error(errors: Callable[[], Any], exc: Exception) -> str | None:
    items = errors()
    if not items:
        return None
    loc = ".".join(str(p) for p in items[0].get("loc", ()))
    return (f"at {loc}: " if loc else "") + str(items[0].get("msg", exc))


def _first_error_line(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    first = None
    if callable(errors):
        first = probe("the first validation error", lambda: _first_error(errors, exc), None)
    if first:
        return first
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class InputChecker:
    """Validates keyword inputs for one signature; built once per signature and reused."""

    __slots__ = ("_fields", "_names", "_sig_name", "_specs", "_validators")

    def __init__(self, signature: Any) -> None:
        self._sig_name: str = signature.__name__
        self._fields: Mapping[str, FieldSpec] = signature.input_fields
        self._specs: Mapping[str, FieldSpec] = signature.fields  # inputs and outputs (demos)
        self._names = frozenset(self._fields)
        self._validators: dict[str, tuple[Validator, bool]] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> InputChecker:
        return self  # bound to an immutable signature; its validator cache is safe to share

    def _validator(self, name: str) -> tuple[Validator, bool]:
        found = self._validators.get(name)
        if found is None:  # built lazily: a field never passed costs nothing
            found = self._validators[name] = _build_validator(self._specs[name])
        return found

    def check_demo(self, index: int, demo: Mapping[str, object]) -> None:
        """A demo's values against the signature, by the rule inputs follow (values are kept as
        given). Any field may be missing or None: an incomplete demo is shown as one."""
        for name, value in demo.items():
            if name not in self._specs:
                import difflib  # only this error path needs it

                close = difflib.get_close_matches(str(name), self._specs, n=1, cutoff=0.5)
                raise InputError(
                    f"{self._sig_name}: demo #{index} has a field `{name}` the signature does not have"
                    + (f" (did you mean `{close[0]}`?)" if close else "")
                    + f"; fields are {', '.join(f'`{n}`' for n in self._specs)}"
                )
            if value is not None:
                where = f"demo #{index}, {self._specs[name].kind} `{name}`"
                self._validated(name, value, where, "; fix the demo's value")

    def _validated(self, name: str, value: object, where: str, fix: str = "") -> object:
        """``value`` of field ``name`` validated by the rule (module docstring), or an
        :class:`InputError` saying ``where`` it was, what was expected and what was seen."""
        validate, _ = self._validator(name)
        try:
            result = validate(value)
            if _bool_as_number(value, result):
                raise ValueError("a bool is not a number; pass 1/0 if a number is meant")
        except SigformError:
            raise
        except Exception as exc:
            raise InputError(
                f"{self._sig_name}: {where} expects {_type_label(self._specs[name].annotation)}, got "
                f"{type(value).__name__} {shorten(repr(value), 80)} ({_first_error_line(exc)}){fix}"
            ) from exc
        return result

    def check(self, inputs: Mapping[str, object]) -> dict[str, Any]:
        """The validated inputs in signature order, or :class:`InputError` before any LM call."""
        unknown = [k for k in inputs if k not in self._names]
        if unknown:
            inputs = self._handle_unknown(inputs, unknown)
        out: dict[str, object] = {}
        missing: list[str] = []
        for name in self._fields:
            value = inputs.get(name, _MISSING)
            if value is not _MISSING:
                out[name] = self._validated(name, value, f"input `{name}`")
            elif self._validator(name)[1]:  # the type accepts None
                out[name] = None
            else:
                missing.append(name)
        for name, value in out.items():
            where = lone_surrogate(value)
            if where is not None:
                raise InputError(
                    f"{self._sig_name}: input `{name}` holds a lone surrogate ({where}), which is not "
                    "valid Unicode and cannot be sent; decode the text with errors='replace' (or fix its "
                    "source) before passing it"
                )
        if missing:
            raise InputError(
                f"{self._sig_name}: missing input{'s' if len(missing) > 1 else ''} "
                f"{', '.join(f'`{m}`' for m in missing)} (inputs: {', '.join(self._fields) or '(none)'})"
            )
        return out

    def _handle_unknown(self, inputs: Mapping[str, object], unknown: list[str]) -> dict[str, object]:
        import difflib  # only this error path needs it

        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, self._names, n=1)
            if close:
                hints.append(f"`{name}` (did you mean `{close[0]}`?)")
            elif _is_lm_setting(name):  # program(..., max_tokens=20): a request setting, not an input
                setting = shorten(repr({name: inputs[name]}), 60)
                hints.append(f"`{name}` (an LM setting, not an input: pass it as config={setting})")
            else:
                hints.append(f"`{name}`")
        message = (
            f"{self._sig_name}: unknown input{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; "
            f"inputs are {', '.join(f'`{n}`' for n in self._fields) or '(none)'}"
        )
        mode = get_setting("unknown_inputs", "error")
        if mode == "error":
            raise InputError(message)
        if mode == "warn":
            warnings.warn(message + " (ignored)", UserWarning, stacklevel=4)
        elif mode != "ignore":
            raise SigformError(f"setting unknown_inputs must be 'error', 'warn' or 'ignore', got {mode!r}")
        return {k: v for k, v in inputs.items() if k in self._names}


# what the LM itself is and where it is: never a per-call request setting
_LM_OWN = frozenset({"model", "api_base", "base_url", "provider", "model_type"})


def check_options(owner: type, options: Mapping[str, object]) -> None:
    """Refuse what ``owner(..., **options)`` (a program's request settings) cannot mean:
    a misspelled argument of ``owner`` (``lmm=lm`` went into the settings and was sent to the
    default model), the LM's own model or endpoint, or an object that is no request value.
    Any other name is passed to the provider as it is (``top_k=40``)."""
    for name, value in options.items():
        problem = _option_problem(owner, name, value)
        if problem:
            params = ", ".join(f"{p}=" for p in _init_parameters(owner))
            raise ParameterError(
                f"{owner.__name__}: unknown argument `{name}` ({problem}); its arguments are {params} "
                "and LM request settings such as temperature=0 or max_tokens=200 (JSON values)"
            )


def _option_problem(owner: type, name: str, value: object) -> str | None:
    import difflib  # only reached for programs built with request settings

    from sigform.lm.credentials import CONNECTION_SETTINGS, is_secret_name

    settings = _lm_settings()
    if name in settings:
        return None
    close = difflib.get_close_matches(name, _init_parameters(owner), n=1, cutoff=0.75)
    if close:
        return f"did you mean `{close[0]}=`?"
    # a misspelled request setting (`temprature`, `max_token`: a secret's name otherwise)
    from sigform.lm.params import misspelled

    if (setting := misspelled(name)) is not None:
        return f"did you mean `{setting}`?"
    # per-call credentials and connection settings are the LM's to resolve (values may be
    # callables or env:/cmd: references)
    if name in CONNECTION_SETTINGS or is_secret_name(name) or name in ("extra_headers", "rollout_id"):
        return None
    if name in _LM_OWN:
        return f"`{name}` belongs to the LM: pass lm=sf.LM(...) with it"
    if not _is_json_value(value):
        return f"a {type(value).__name__} is no request setting"
    return None


def _is_json_value(value: object, depth: int = 0) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if depth > 32:
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_json_value(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json_value(v, depth + 1) for k, v in value.items())
    return False


def _init_parameters(owner: type) -> list[str]:
    """The named parameters of ``owner``'s constructors, subclass first."""
    import inspect

    out: list[str] = []
    for klass in owner.__mro__:
        init = vars(klass).get("__init__")
        if init is None or klass is object:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in out:
                out.append(p.name)
    return out


def _is_lm_setting(name: str) -> bool:
    """Whether ``name`` is a request parameter or one of sigform's per-call LM options: what
    ``config=`` takes (only this error path imports them)."""
    return name in _lm_settings()


def _lm_settings() -> frozenset[str]:
    from sigform.lm.params import BASE_SPECS, CONTROL

    return frozenset(BASE_SPECS) | CONTROL
