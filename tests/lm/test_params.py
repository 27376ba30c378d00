"""The parameter schema: validation before any network call, conditions, dropping, nesting."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_fake_openai import FakeOpenAIServer

from sigform.errors import InputError
from sigform.lm import LM, ParameterError, ParameterWarning, ParamSpec
from sigform.lm.params import BASE_SPECS, build_schema, nest_dotted

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _private_cache(isolated_cache: Path) -> None:
    """Every test here gets its own cache directory."""


def lm_for(server: FakeOpenAIServer, model: str = "openai/fake", fast: bool | None = True,
           **kw: object) -> LM:
    return LM(model, api_base=server.api_base, api_key="k", fast_path=fast, cache=False, **kw)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"temperature": 2.5}, r"`temperature`.*0 <= temperature <= 2.*2\.5"),
        ({"temperature": -0.1}, r"`temperature`"),
        ({"temperature": "hot"}, r"`temperature`.*expects int or float, got str"),
        ({"temperature": True}, r"`temperature`.*got bool"),
        ({"temperature": float("nan")}, r"`temperature`"),
        ({"top_p": 1.5}, r"`top_p`"),
        ({"max_tokens": 0}, r"`max_tokens`.*>= 1"),
        ({"max_tokens": 1.5}, r"`max_tokens`.*expects int"),
        ({"n": 0}, r"`n`"),
        ({"stop": ""}, r"`stop`"),
        ({"stop": ["ok", ""]}, r"`stop`"),
        ({"reasoning_effort": "max"}, r"`reasoning_effort`.*one of 'none', 'minimal'"),
        ({"reasoning.effort": "extreme"}, r"`reasoning.effort`"),
        ({"top_logprobs": 50}, r"`top_logprobs`"),
        ({"logprobs": "yes"}, r"`logprobs`"),
        ({"presence_penalty": 3}, r"`presence_penalty`"),
    ],
)
def test_invalid_values_fail_before_any_request(lm_server: FakeOpenAIServer, fast_path: bool,
                                                kwargs: dict, pattern: str) -> None:
    lm = lm_for(lm_server, fast=fast_path)
    with pytest.raises(ParameterError, match=pattern):
        lm(MSG, **kwargs)
    with pytest.raises(ParameterError):
        list(lm.stream(MSG, **kwargs))
    assert lm_server.requests == []
    assert issubclass(ParameterError, InputError) and issubclass(ParameterError, ValueError)


def test_invalid_defaults_fail_at_construction() -> None:
    with pytest.raises(ParameterError, match="temperature"):
        LM("openai/gpt-4o-mini", temperature=9)


def test_schema_describes_each_setting() -> None:
    temp = BASE_SPECS["temperature"]
    assert temp.type == (int, float) and temp.rule == "0 <= temperature <= 2" and temp.applies
    effort = BASE_SPECS["reasoning_effort"]
    assert effort.choices is not None and "high" in effort.choices
    assert BASE_SPECS["n"].default == 1
    assert BASE_SPECS["reasoning.effort"].path == ("reasoning", "effort")
    assert all(isinstance(s, ParamSpec) and s.condition for s in BASE_SPECS.values())


def test_schema_follows_litellm_knowledge() -> None:
    schema = LM("openai/o1").param_schema
    assert not schema["presence_penalty"].applies
    assert "not supported by openai/o1" in schema["presence_penalty"].condition
    assert schema["temperature"].applies and schema["temperature"].only_values == (1, 1.0)
    assert "reasoning model" in schema["temperature"].condition
    assert schema["reasoning_effort"].applies and schema["n"].applies
    gpt4o = LM("openai/gpt-4o-mini").param_schema
    assert gpt4o["temperature"].only_values is None and gpt4o["presence_penalty"].applies
    assert not gpt4o["reasoning_effort"].applies
    claude = LM("anthropic/claude-sonnet-4-5").param_schema
    assert claude["thinking"].applies and not claude["seed"].applies


def test_settings_that_do_not_apply_are_dropped_with_one_warning(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server, "openai/o1", fast=False)
    with pytest.warns(ParameterWarning) as record:
        lm(MSG, presence_penalty=0.5, temperature=0.2, reasoning_effort="low")
    messages = [str(w.message) for w in record]
    assert any("presence_penalty" in m for m in messages) and any("temperature" in m for m in messages)
    body = lm_server.requests[-1]
    assert "presence_penalty" not in body and "temperature" not in body
    assert body["reasoning_effort"] == "low"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second call warns no more
        lm(MSG, presence_penalty=0.5, temperature=0.2)
    lm(MSG, temperature=1)
    assert lm_server.requests[-1]["temperature"] == 1


def test_strict_mode_raises_instead_of_dropping(lm_server: FakeOpenAIServer) -> None:
    lm = lm_for(lm_server, "openai/o1", fast=False, strict=True)
    with pytest.raises(ParameterError, match="presence_penalty"):
        lm(MSG, presence_penalty=0.5)
    with pytest.raises(ParameterError, match="only temperature=1"):
        lm(MSG, temperature=0)
    assert lm_server.requests == []


def test_unknown_settings_pass_through(lm_server: FakeOpenAIServer, fast_path: bool) -> None:
    lm_for(lm_server, fast=fast_path)(MSG, top_k=5, mirostat=2)
    body = lm_server.requests[-1]
    assert body["top_k"] == 5 and body["mirostat"] == 2


def test_none_means_not_set(lm_server: FakeOpenAIServer) -> None:
    lm_for(lm_server, temperature=0.5)(MSG, temperature=None, max_tokens=None)
    assert "temperature" not in lm_server.requests[-1] and "max_tokens" not in lm_server.requests[-1]


def test_nest_dotted() -> None:
    assert nest_dotted({"a": 1}) == {"a": 1}
    assert nest_dotted({"reasoning.effort": "low", "reasoning": {"summary": "auto"}}) == {
        "reasoning": {"summary": "auto", "effort": "low"}
    }
    assert nest_dotted({"x.y.z": 1, "x.w": 2}) == {"x": {"y": {"z": 1}, "w": 2}}
    with pytest.raises(ParameterError, match="conflicts"):
        nest_dotted({"reasoning": "high", "reasoning.effort": "low"})


def test_unknown_model_means_everything_applies() -> None:
    schema = build_schema("x", None)
    assert all(s.applies for s in schema.values())


@settings(max_examples=150, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=10))
def test_temperature_rule_matches_range(value: float) -> None:
    spec = BASE_SPECS["temperature"]
    if 0 <= value <= 2:
        assert spec.validate(value) == value
    else:
        with pytest.raises(ParameterError):
            spec.validate(value)
