"""Probes: a question whose failure means "not known" returns the default and says so at debug
level, naming the question and the exception type, never the exception's message."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sigform.probes import probe


def test_a_probe_that_answers_returns_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="sigform.probes"):
        assert probe("two", lambda: 2, 0) == 2
    assert caplog.records == []


def test_a_failed_probe_returns_the_default_and_logs_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    def ask() -> int:
        raise RuntimeError("https://user:sk-secret-123@example.com/v1 rejected")

    with caplog.at_level(logging.DEBUG, logger="sigform.probes"):
        assert probe("the answer", ask, 41) == 41
    [record] = caplog.records
    assert record.levelno == logging.DEBUG and record.name == "sigform.probes"
    assert "the answer" in record.getMessage() and "RuntimeError" in record.getMessage()
    assert "sk-secret-123" not in record.getMessage()


def test_interrupts_are_not_swallowed() -> None:
    def ask() -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe("anything", ask, 0)


class _BrokenLitellm:
    """litellm whose model tables raise (a model it has never heard of, a changed API)."""

    def __getattr__(self, name: str) -> Any:
        def fail(*_: Any, **__: Any) -> Any:
            raise ValueError(f"litellm.{name} exploded")

        return fail


def test_litellm_capability_probes_say_why_at_debug_level(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """These used to be ``except Exception: return default`` with nothing logged."""
    from sigform.lm import litellm_backend

    monkeypatch.setattr(litellm_backend, "import_litellm", lambda: _BrokenLitellm())
    with caplog.at_level(logging.DEBUG, logger="sigform.probes"):
        assert litellm_backend.provider_of("mystery-model") == "unknown"
        assert litellm_backend.capability("json_schema", "mystery-model", "openai") is False
        assert litellm_backend.supported_params("mystery-model", "openai") is None
        assert litellm_backend.is_openai_reasoning("mystery-model", "openai") is False
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 4 and all("ValueError" in m and "mystery-model" in m for m in messages)


def test_a_metric_that_raises_rejects_the_demo_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    import sigform as sf
    from sigform.optimize.base import passes

    def metric(example: Any, prediction: Any) -> bool:
        raise ZeroDivisionError

    with caplog.at_level(logging.DEBUG, logger="sigform.probes"):
        assert passes(metric, sf.Example(a=1), sf.Prediction(a=1), 0.5) is False
    assert any("ZeroDivisionError" in r.getMessage() for r in caplog.records)


def test_no_silent_catch_all_probe_is_left_in_the_package() -> None:
    """``except Exception:`` whose whole body returns, passes or assigns a default hides why a
    capability was not detected: such probes go through ``probe`` (which logs at debug)."""
    import ast
    from pathlib import Path

    import sigform

    # the coercion fast path: its failure is never hidden, the full path then reports the error
    allowed = {"types/coercion/__init__.py"}
    root = Path(sigform.__file__).parent
    silent = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ExceptHandler) or node.name is not None:
                continue
            if not (isinstance(node.type, ast.Name) and node.type.id == "Exception"):
                continue
            quiet = all(isinstance(s, (ast.Return, ast.Pass, ast.Assign)) for s in node.body)
            if quiet and where not in allowed:
                silent.append(f"{where}:{node.lineno}")
    assert silent == []


def test_token_limits_of_an_unknown_model_say_why_at_debug_level(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from sigform.provider import tokens

    monkeypatch.setattr(tokens, "_litellm", lambda: _BrokenLitellm())
    tokens._model_info.cache_clear()
    with caplog.at_level(logging.DEBUG, logger="sigform.probes"):
        limits = tokens._model_info("mystery-model-xyz")
    tokens._model_info.cache_clear()
    assert (limits.context_window, limits.max_output) == (None, None)
    assert any("mystery-model-xyz" in r.getMessage() for r in caplog.records)
