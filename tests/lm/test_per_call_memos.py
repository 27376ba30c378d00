"""What every call needs but never changes is worked out once (issue 18 item 3: sigform's own
CPU per call): the default pruning options, the history's redacted endpoint, the fast-path
eligibility of a model name, whether a setting name is secret, the prune report of a request with
nothing pruned. Each memo still answers right."""

from __future__ import annotations

import builtins
import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from sigform.conversation import Pruning
from sigform.conversation.sending import RequestFitter
from sigform.lm import credentials, routing
from sigform.testing import ScriptedLM


def test_requests_share_the_default_pruning_options() -> None:
    lm = ScriptedLM(["x"])
    a, b = RequestFitter(lm, [], {}), RequestFitter(lm, [], {"prune": True})
    assert a.pruning is b.pruning and a.pruning == Pruning()
    off = RequestFitter(lm, [], {"prune": False}).pruning
    assert off is RequestFitter(lm, [], {"prune": False}).pruning and off == Pruning(enabled=False)
    own = Pruning(keep_last=2)
    assert RequestFitter(lm, [], {"prune": own}).pruning is own


def test_redacted_endpoints_are_memoised_and_still_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    rewrites: list[str] = []
    rewrite = credentials._rewrite_url
    monkeypatch.setattr(credentials, "_rewrite_url", lambda url, r: rewrites.append(url) or rewrite(url, r))
    url = "https://user:pw@memo-test.example/v1?api_key=abc&x=1"
    first = credentials.redact_url(url)
    assert first == "https://***@memo-test.example/v1?api_key=***&x=1"
    assert credentials.redact_url(url) is first and len(rewrites) == 1  # a memo hit
    plain = "http://plain-memo.example/v1"
    assert credentials.redact_url(plain) == plain and credentials.redact_url(plain) == plain
    assert len(rewrites) == 2


@pytest.mark.parametrize(
    ("model", "api_base", "eligible"),
    [
        ("openai/memo-model-a", "http://127.0.0.1:9/v1", True),
        ("openai/memo-model-a", None, False),
        ("openai/memo-model-a", "", False),
        ("lm_studio/memo-model-b", None, True),
        ("anthropic/memo-model-c", "http://127.0.0.1:9/v1", False),
        ("openai/responses/memo-model-d", "http://127.0.0.1:9/v1", False),
        ("local", None, True),
    ],
)
def test_fast_path_eligibility_is_memoised_per_model_and_whether_an_endpoint_is_set(
    model: str, api_base: str | None, eligible: bool, monkeypatch: Any
) -> None:
    assert routing.fast_path_eligible(model, api_base) is eligible
    asked: list[str] = []
    monkeypatch.setattr(routing, "speaks_chat_completions", lambda m: asked.append(m) or True)
    assert routing.fast_path_eligible(model, api_base) is eligible  # answered from the memo
    assert asked == []
    # the endpoint itself (which may carry credentials) is not part of the memo's key
    assert list(inspect.signature(routing._eligible.__wrapped__).parameters) == ["model", "has_base"]


def test_secret_setting_names_are_memoised_and_still_answered() -> None:
    assert credentials.is_secret_name("memo_api_token") and not credentials.is_secret_name("memo_temperature")
    before = credentials.is_secret_name.cache_info().hits
    assert credentials.is_secret_name("memo_api_token") and not credentials.is_secret_name("memo_temperature")
    assert credentials.is_secret_name.cache_info().hits == before + 2



def test_a_request_with_nothing_pruned_sets_no_report_but_still_masks_an_outer_one() -> None:
    from sigform.lm.history import active_report, reporting

    assert reporting(None) is reporting(None)  # the common case: one shared no-op, no generator
    with reporting(None):
        assert active_report() is None
    outer = object()
    with reporting(outer):
        assert active_report() is outer
        with reporting(None):  # a request sent inside another's send: not reported as pruned
            assert active_report() is None
        assert active_report() is outer
    assert active_report() is None


@contextlib.contextmanager
def _imports_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names every import statement run inside the block asks for."""
    imported: list[str] = []
    real = builtins.__import__

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counting)
    try:
        yield imported
    finally:
        builtins.__import__ = real  # not monkeypatch.setattr: it runs an import statement itself


def test_asking_an_lm_about_a_feature_runs_no_import_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    # a function-level ``from ... import`` costs 1-3 µs per run; supports() is asked twice a call
    import sigform as sf

    lm = sf.LM("openai/memo-model-f", api_base="http://127.0.0.1:9/v1", api_key="k")
    assert lm.supports("stop")
    with _imports_counted(monkeypatch) as imported:
        assert lm.supports("stop") and not lm.supports("reasoning")
    assert imported == []


def test_a_default_adapter_call_runs_no_import_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    # the JSON route asks supports('json_schema'/'json_object') several times a call, records
    # what the endpoint accepted and types the outputs: none of it re-runs an import statement
    import sigform as sf
    from sigform.testing import ScriptedLM

    lm = ScriptedLM(['{"answer": 4}'] * 3, features={"json_schema", "json_object"})
    program = sf.Predict("question -> answer: int", lm=lm, adapter=sf.JSONAdapter())
    assert program(question="2+2?").answer == 4
    fast = sf.LM("openai/memo-model-g", api_base="http://127.0.0.1:9/v1", api_key="k")
    assert fast.supports("json_schema")
    with _imports_counted(monkeypatch) as imported:
        answer = program(question="2+2?").answer
        asked = fast.supports("json_schema") and fast.supports("json_object")
    assert answer == 4 and asked
    assert imported == []
