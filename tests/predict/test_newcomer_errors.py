"""What a newcomer gets wrong first gets a clear error (issue 27, third pass).

Each case was found by trying the README as a newcomer would: the mistake was silently accepted
(``lmm=lm`` became a request setting and the call went to the default model) or the error did
not say what to do (a bare ``TypeError`` / ``KeyError``, or a "did you mean" naming the same word).
"""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.errors import InputError, NoSuchField, ParameterError
from sigform.settings import get_setting
from sigform.testing import ScriptedLM


class Answer(sf.Signature):
    """Answer with a short factoid."""

    question: str = sf.InputField()
    answer: str = sf.OutputField()


LM = ScriptedLM(['{"answer": "Paris"}'] * 10)


@pytest.mark.parametrize(
    ("build", "want"),
    [
        (lambda: sf.Predict("question -> answer", lmm=LM), r"argument `lmm` \(did you mean `lm=`\?\)"),
        (lambda: sf.Predict(Answer, demo=[]), r"`demo` \(did you mean `demos=`\?\)"),
        (lambda: sf.Predict(Answer, adaptor=sf.ChatAdapter()), r"did you mean `adapter=`"),
        (lambda: sf.ChainOfThought(Answer, native_reasonin=True), r"did you mean `native_reasoning=`"),
        (lambda: sf.Predict(Answer, model="gpt-4o-mini"), r"`model` belongs to the LM: pass lm=sf\.LM"),
        (lambda: sf.Predict(Answer, my_lm=LM), r"a ScriptedLM is no request setting"),
        (lambda: sf.Agent("question -> answer", [], lmm=LM), r"Agent: unknown argument `lmm`"),
        (lambda: sf.ChainOfThought(Answer, temprature=0), r"`temprature` \(did you mean `temperature`"),
        # `*_token` names are secrets, passed to the LM's credentials: the typo vanished there
        (lambda: sf.Predict(Answer, max_token=5), r"`max_token` \(did you mean `max_tokens`\?\)"),
    ],
)
def test_a_misspelled_program_argument_is_an_error(build, want) -> None:
    with pytest.raises(ParameterError, match=want) as info:
        build()
    assert "temperature=0" in str(info.value)  # says what may go there


def test_request_settings_and_provider_extras_are_still_accepted() -> None:
    program = sf.Predict(
        Answer, lm=LM, temperature=0, max_tokens=20, top_k=40, extra_body={"x": [1]}, num_retries=2,
        api_version="2024-01-01", rollout_id=1,
    )
    assert program.config["top_k"] == 40 and program(question="q").answer == "Paris"


def test_an_output_named_as_an_input_is_not_its_own_suggestion() -> None:
    with pytest.raises(InputError) as info:
        Answer(answer="x")
    message = str(info.value)
    assert "`answer` is an output" in message and "did you mean `answer`" not in message


def test_a_demo_that_is_no_example_names_the_program_and_the_index() -> None:
    want = r"Predict\(Answer\): demo #1 is str 'q'; expected an Example or a dict"
    with pytest.raises(InputError, match=want):
        sf.Predict(Answer, demos=[{"question": "a", "answer": "b"}, "q"])
    program = sf.Predict(Answer, lm=LM)
    with pytest.raises(InputError, match=r"Answer: per-call demo #0 is int 3"):
        program(Answer(question="q"), demos=[3])


def test_a_missing_example_key_names_the_fields_and_the_closest() -> None:
    example = sf.Example(question="a", answer="b")
    with pytest.raises(KeyError) as info:  # still a KeyError: `except KeyError` code keeps working
        example["questoin"]
    assert isinstance(info.value, NoSuchField)
    assert str(info.value) == (
        "Example has no field 'questoin' (did you mean 'question'?); fields: 'question', 'answer'"
    )
    assert info.value.args == ("questoin",)
    assert example.get("questoin") is None and "questoin" not in example
    with pytest.raises(NoSuchField, match=r"Prediction has no field 'zzz'; fields: 'answer'$"):
        sf.Prediction(answer="x")["zzz"]


@pytest.mark.parametrize(
    ("mistake", "want"),
    [
        (lambda: sf.configure(lm="openai/gpt-4o-mini"), r"configure\(\): lm= takes an LM, e\.g\. lm=sf"),
        (lambda: sf.context(adapter="json").__enter__(), r"context\(\): adapter= takes an adapter instance"),
        (lambda: sf.Predict(Answer, lm="openai/gpt-4o"), r"Predict: lm= takes an LM.*got str .openai"),
        (lambda: sf.Predict(Answer, adapter=sf.JSONAdapter), r"got the class JSONAdapter"),
        (lambda: sf.Agent("question -> answer", [], lm="openai/x"), r"Agent: lm= takes an LM"),
        (lambda: sf.Predict(Answer, lm=LM)(Answer(question="q"), lm="x"), r"Answer call: lm= takes an LM"),
        (lambda: sf.Predict(Answer, lm=LM)(Answer(question="q"), adapter="j"), r"adapter= takes an adapter"),
    ],
)
def test_a_model_or_adapter_name_where_an_object_goes_is_a_clear_error(mistake, want) -> None:
    # each failed later as "'str' object has no attribute 'supports'" (or 'run_call', or a
    # missing argument of run_call for the class)
    with pytest.raises(ParameterError, match=want):
        mistake()
    assert get_setting("lm") is None and get_setting("adapter") is None


def test_a_misspelled_field_of_a_prediction_gets_pythons_did_you_mean() -> None:
    import subprocess
    import sys

    pred = sf.Prediction(answer="Paris", confidence=0.9)
    assert {"answer", "confidence"} <= set(dir(pred))  # completion in a notebook, too
    script = "import sigform as sf\nsf.Prediction(answer='Paris', confidence=0.9).answr\n"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stderr.strip().endswith("Did you mean: 'answer'?"), run.stderr[-300:]


def test_with_inputs_names_the_closest_key() -> None:
    with pytest.raises(KeyError) as info:
        sf.Example(question="Capital of France?", answer="Paris").with_inputs("qestion")
    assert "has no field 'qestion' (did you mean 'question'?)" in str(info.value)
