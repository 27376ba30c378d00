"""The one exception hierarchy: every error class sigform defines is a SigformError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sigform
import sigform.errors as errors
from sigform.errors import LMError, SigformError

# modules that import optional or heavy things (the local model's server, provider fakes) are
# skipped when they cannot be imported here; everything else must import
_OPTIONAL = ("sigform.local", "sigform.testing.providers", "sigform.cli")


def _all_modules() -> list[object]:
    out = []
    for info in pkgutil.walk_packages(sigform.__path__, "sigform."):
        if info.name.endswith(".__main__"):  # running it would start the command line
            continue
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:
            if not info.name.startswith(_OPTIONAL):
                raise
    return out


_TRANSPORT_ERRORS = (
    "TransportError", "Unreachable", "TimedOut", "StatusError", "StreamError", "TooManyRedirects",
    "Redirected",
)


def test_every_exception_class_in_sigform_is_a_sigform_error() -> None:
    internal = {"sigform.types.coercion._plan.Invalid"}  # never escapes coerce()
    # the fast path's failures, mapped to LMError by the LM (errors_map) like litellm's
    internal |= {f"sigform.lm.wire.{name}" for name in _TRANSPORT_ERRORS}
    offenders = []
    for module in _all_modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if not issubclass(obj, BaseException) or not obj.__module__.startswith("sigform"):
                continue
            if issubclass(obj, Warning):  # warnings are issued, not raised
                continue
            name = f"{obj.__module__}.{obj.__qualname__}"
            if name not in internal and not issubclass(obj, SigformError):
                offenders.append(name)
    assert sorted(set(offenders)) == []


def test_errors_module_lists_its_classes() -> None:
    defined = {
        name
        for name, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == "sigform.errors"
    }
    assert defined <= set(errors.__all__)


def test_moved_errors_keep_their_old_import_paths() -> None:
    from sigform.predict import BatchError as from_predict
    from sigform.predict.batch import BatchError as from_batch
    from sigform.predict.persistence import ProgramStateError as from_persistence
    from sigform.types.json_text import JSONTextError as from_json_text

    assert from_predict is from_batch is errors.BatchError
    assert from_persistence is errors.ProgramStateError
    assert from_json_text is errors.JSONTextError
    assert issubclass(errors.ProgramStateError, ValueError) and issubclass(errors.JSONTextError, ValueError)


def test_batch_error_keeps_results_and_failures() -> None:
    err = errors.BatchError("stopped", results=[None, 1], failures=["f"])  # type: ignore[list-item]
    assert (err.results, err.failures, str(err)) == ([None, 1], ["f"], "stopped")


def test_script_error_is_a_sigform_error_but_not_an_lm_error() -> None:
    from sigform.testing import ScriptError

    assert issubclass(ScriptError, SigformError) and not issubclass(ScriptError, LMError)


@pytest.mark.parametrize("name", ["BatchError", "ProgramStateError", "ToolError", "ToolArgumentsError"])
def test_errors_are_public_names(name: str) -> None:
    assert getattr(sigform, name) is getattr(errors, name)


@pytest.mark.parametrize(
    ("name", "module"),
    [
        *[(n, "sigform.adapters") for n in ("AdapterResult", "FieldDelta")],
        *[
            (n, "sigform.types")
            for n in (
                "coerce_fields",
                "describe_type",
                "TypeDescription",
                "json_schema",
                "strict_json_schema",
                "type_name",
                "resolve_type_name",
                "Media",
                "iter_media",
            )
        ],
        *[(n, "sigform.predict") for n in ("track_usage", "Failure")],
    ],
)
def test_integration_names_are_exported(name: str, module: str) -> None:
    assert name in sigform.__all__
    assert getattr(sigform, name) is getattr(importlib.import_module(module), name)


def test_one_null_handler_on_the_package_logger() -> None:
    import logging

    handlers = logging.getLogger("sigform").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    import sigform.predict  # noqa: F401  (subpackages add no handler of their own)

    assert not logging.getLogger("sigform.predict").handlers


def test_every_sigform_error_is_defined_in_the_errors_module() -> None:
    """One module holds the whole hierarchy (CredentialError, ParameterError, RequestVetoed and
    others used to live beside their code)."""
    elsewhere = set()
    for module in _all_modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            private = obj.__name__.startswith("_")  # control flow that never escapes its module
            if issubclass(obj, SigformError) and obj.__module__ != "sigform.errors" and not private:
                elsewhere.add(f"{obj.__module__}.{obj.__qualname__}")
    assert sorted(elsewhere) == []


def test_the_errors_docstring_draws_every_error_class() -> None:
    doc = errors.__doc__ or ""
    classes = {name for name in errors.__all__ if isinstance(getattr(errors, name), type)}
    drawn = {name for name in classes if issubclass(getattr(errors, name), BaseException)}
    missing = [n for n in drawn if f" {n} " not in doc.replace("\n", " ")]
    assert len(drawn) == len(classes) - 1 and missing == []  # FieldError is no exception


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("sigform.lm.credentials", "CredentialError"),
        ("sigform.lm", "CredentialError"),
        ("sigform.lm.params", "ParameterError"),
        ("sigform.lm", "ParameterError"),
        ("sigform.hooks", "RequestVetoed"),
        ("sigform.evaluation", "MetricValueError"),
        ("sigform.evaluation.metrics", "MetricValueError"),
        ("sigform.lm.cache_codec", "CacheEntryError"),
        ("sigform.lm.response", "MalformedResponseError"),
        ("sigform.testing", "ScriptError"),
        ("sigform.testing.scripted", "ScriptError"),
        ("sigform", "RequestVetoed"),
        ("sigform", "CredentialError"),
        ("sigform", "ParameterError"),
    ],
)
def test_errors_moved_into_the_errors_module_keep_their_old_import_paths(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_the_text_excerpt_utility_is_not_part_of_the_errors_module() -> None:
    from sigform.excerpt import shorten

    assert "shorten" not in errors.__all__
    assert shorten("a\nb" * 200, 20) == "a\\nba\\nba\\nba ... nb"


def test_the_cause_of_a_user_facing_error_is_chained() -> None:
    """Where no secret can be in it, the original exception stays reachable (``raise ... from exc``)."""
    from sigform.types.names import resolve_type_name

    with pytest.raises(sigform.SignatureError) as info:
        resolve_type_name("list[")
    assert isinstance(info.value.__cause__, SyntaxError)

    def lookup(x: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    with pytest.raises(sigform.ToolError) as tool_info:
        sigform.Tool(lookup)
    assert isinstance(tool_info.value.__cause__, NameError)


def test_a_credential_error_never_chains_what_it_replaces(monkeypatch: pytest.MonkeyPatch) -> None:
    from sigform.lm.credentials import Credential

    monkeypatch.delenv("SIGFORM_TEST_UNSET_KEY", raising=False)
    with pytest.raises(errors.CredentialError) as info:
        Credential("api_key", "env:SIGFORM_TEST_UNSET_KEY").get()
    assert info.value.__cause__ is None and info.value.__suppress_context__
