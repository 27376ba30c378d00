"""A misspelled request setting is a clear error before anything is sent, per call, per LM and
through a program's ``config=`` (issue 27, left from the third pass).

Before: ``lm(..., temprature=0)`` and ``LM(..., temprature=0)`` sent ``temprature`` to the
provider (most ignore it: the call ran at the default temperature); ``max_token=5`` matched the
rule for secrets' names (``*_token``) and vanished into the credentials; ``api_kye="sk-..."`` was
sent as a request field and kept in the history and the cache key.
"""

from __future__ import annotations

from typing import Any

import pytest

import sigform as sf
from sigform.testing import ScriptedBackend


class QA(sf.Signature):
    question: str = sf.InputField()
    answer: str = sf.OutputField()


def _lm(**kwargs: Any) -> tuple[sf.LM, ScriptedBackend]:
    backend = ScriptedBackend(lambda *a, **k: '{"answer": "4"}')
    return sf.LM("openai/gpt-4o-mini", api_key="sk-x", backend=backend, cache=False, **kwargs), backend


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("temprature", "temperature"), ("max_token", "max_tokens"), ("timout", "timeout"),
     ("api_kye", "api_key"), ("reasoning_efort", "reasoning_effort")],
)
def test_a_misspelled_setting_of_a_call_is_refused_before_sending(typo: str, meant: str) -> None:
    lm, backend = _lm()
    with pytest.raises(sf.ParameterError) as info:
        lm("hi", **{typo: "sk-SECRET-1"})
    message = str(info.value)
    assert f"`{typo}`" in message and f"did you mean `{meant}`?" in message
    assert "sk-SECRET-1" not in message  # the value may be a misplaced key
    assert backend.requests == [] and len(lm.history) == 0


def test_a_misspelled_setting_of_an_lm_is_refused_when_it_is_made() -> None:
    with pytest.raises(sf.ParameterError, match=r"LM\('openai/gpt-4o-mini'\): unknown setting `temprature`; "
                                                r"did you mean `temperature`\?"):
        _lm(temprature=0)
    with pytest.raises(sf.ParameterError, match="did you mean `retry_delay`"):
        _lm(retry_dely=1)


def test_a_misspelled_setting_in_a_programs_config_is_refused() -> None:
    lm, backend = _lm()
    program = sf.Predict(QA, lm=lm)
    with pytest.raises(sf.ParameterError, match="did you mean `temperature`"):
        program(question="2+2?", config={"temprature": 0})
    with pytest.raises(sf.ParameterError, match="did you mean `api_key`"):
        sf.Predict(QA, lm=lm, api_kye="sk-SECRET-1")
    assert backend.requests == []


def test_a_providers_own_settings_are_still_sent() -> None:
    own = {"top_k": 40, "min_p": 0.05, "max_new_tokens": 8, "repetition_penalty": 1.1,
           "prompt_cache_key": "k1", "top_a": 0.2, "typical_p": 0.9, "cache_prompt": True}
    lm, backend = _lm(**own)
    lm("hi", **own)
    assert {name: backend.requests[0].params[name] for name in own} == own
    assert sf.Predict(QA, lm=lm, **own)(question="2+2?").answer == "4"
