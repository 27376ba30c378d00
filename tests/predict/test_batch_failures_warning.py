"""A batch whose examples failed says so where the user sees it (a warning), not only in the
``sigform`` log, which has no handler unless the application adds one: a typo in every example's
input name used to come back as ``[None, None]`` with nothing shown."""

from __future__ import annotations

import asyncio
import warnings

import pytest

import sigform as sf
from sigform.predict.batch import BatchFailureWarning
from sigform.testing import ScriptedLM

ANSWER = "[[ ## answer ## ]]\n4\n[[ ## completed ## ]]"


def _program() -> sf.Predict:
    return sf.Predict("question -> answer", lm=ScriptedLM([ANSWER] * 4), adapter=sf.ChatAdapter())


def test_failed_examples_come_with_a_warning_naming_the_first_error_and_pointing_at_the_call() -> None:
    expected = r"1 of 2 examples failed .*#1: InputError: .*qestion"
    with pytest.warns(BatchFailureWarning, match=expected) as seen:
        results = _program().batch([{"question": "2+2"}, {"qestion": "2+2"}], progress=False, num_threads=1)
    assert results[1] is None and results[0] is not None
    assert seen[0].filename == __file__  # the user's line, not sigform's


def test_abatch_warns_the_same_way() -> None:
    with pytest.warns(BatchFailureWarning, match="1 of 1 examples failed") as seen:
        asyncio.run(_program().abatch([{"qestion": "x"}], progress=False))
    assert seen[0].filename == __file__


def test_no_warning_when_failures_are_asked_for_or_none_failed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchFailureWarning)
        results, failures = _program().batch([{"qestion": "x"}], progress=False, return_failures=True)
        assert results == [None] and len(failures) == 1
        assert _program().batch([{"question": "x"}], progress=False)[0] is not None
