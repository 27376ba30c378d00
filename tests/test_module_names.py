"""Modules and classes are named for what they hold (issue 16, item 7)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sigform


@pytest.mark.parametrize(
    ("module", "holds"),
    [
        ("sigform.local._server_registry", "ensure_server"),  # was local/_shared.py
        ("sigform.predict.context_vars", "track_usage"),  # was predict/runstate.py
        ("sigform.types.media_sources", "fetch"),  # byte sources, split from types/media.py
        ("sigform.hook_events", "RequestEvent"),
    ],
)
def test_modules_named_for_their_job(module: str, holds: str) -> None:
    assert hasattr(importlib.import_module(module), holds)


@pytest.mark.parametrize("old", ["sigform.local._shared", "sigform.predict.runstate"])
def test_old_module_names_are_gone(old: str) -> None:
    with pytest.raises(ImportError):
        importlib.import_module(old)


def test_the_media_model_does_no_io_itself() -> None:
    from sigform.types import media

    own = [n for n, o in vars(media).items() if inspect.isfunction(o) and o.__module__ == media.__name__]
    assert own == ["iter_media"] and media.fetch.__module__ == "sigform.types.media_sources"
    assert media.sniff_mime(b"\x89PNG\r\n\x1a\n") == "image/png"  # still importable from here


@pytest.mark.parametrize("name", ["Reply", "Request"])
def test_one_class_per_name_outside_the_test_doubles(name: str) -> None:
    """The agent's reading of one LM turn is ``Turn`` (``Reply`` is the provider fakes' reply);
    the call loop's planned request is ``PlannedCall`` (``Request`` is the LM's request)."""
    defined = []
    for info in pkgutil.walk_packages(sigform.__path__, "sigform."):
        if info.name.startswith(("sigform.testing", "sigform.local", "sigform.cli")):
            continue
        module = importlib.import_module(info.name)
        defined += [
            f"{info.name}.{n}"
            for n, obj in inspect.getmembers(module, inspect.isclass)
            if n == name and obj.__module__ == info.name
        ]
    assert defined == ([] if name == "Reply" else ["sigform.lm.request.Request"])


def test_the_chat_message_type_is_defined_once_as_a_typed_dict() -> None:
    """``Message`` was ``dict[str, Any]``, written again in 17 modules."""
    from sigform.message import Message

    others = []
    for info in pkgutil.walk_packages(sigform.__path__, "sigform."):
        if info.name.startswith(("sigform.local", "sigform.cli")):
            continue
        module = importlib.import_module(info.name)
        if "Message" in vars(module) and vars(module)["Message"] is not Message:
            others.append(info.name)
    assert others == [] and Message.__required_keys__ == frozenset({"role", "content"})
