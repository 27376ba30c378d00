"""The openai SDK is imported in the background when an LM on the fast path is built (issue 18
item 1): a notebook's first call finds it loaded. Checked structurally in fresh processes (no
timings): which modules are loaded after the LM is built and a short wait, without any call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sigform.lm.sdk_warmup import may_use_sdk

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys, threading, time
import sigform as sf
before = "openai" in sys.modules
lm = sf.LM({model!r}, {base}api_key="k", cache=False{extra})
for thread in threading.enumerate():
    if thread.name == "sigform-warmup":
        thread.join(60)
print(json.dumps({{"before": before, "after": "openai" in sys.modules, "calls": lm.stats["calls"]}}))
"""


def _loaded(model: str, base: str = "", extra: str = "") -> dict[str, object]:
    code = PROGRAM.format(model=model, base=base, extra=extra)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_building_a_fast_path_lm_loads_the_sdk_without_a_call() -> None:
    seen = _loaded("openai/gpt-4o-mini", base="api_base='http://127.0.0.1:9/v1', ")
    assert seen == {"before": False, "after": True, "calls": 0}


@pytest.mark.parametrize(
    ("model", "base", "extra"),
    [
        ("openai/gpt-4o-mini", "api_base='http://127.0.0.1:9/v1', ", ", fast_path=False"),
        ("anthropic/claude-3-5-haiku-latest", "", ""),
    ],
)
def test_an_lm_that_will_not_use_the_sdk_does_not_load_it(model: str, base: str, extra: str) -> None:
    assert _loaded(model, base=base, extra=extra)["after"] is False


def test_which_lms_are_expected_to_use_the_sdk() -> None:
    assert may_use_sdk("local", False, None)
    assert may_use_sdk("lm_studio/qwen", False, None)
    assert may_use_sdk("hosted_vllm/llama", True, None)
    assert not may_use_sdk("hosted_vllm/llama", False, None)  # no endpoint: litellm's route
    assert not may_use_sdk("openai/gpt-4o-mini", True, False)
    assert may_use_sdk("anything/else", False, True)
    assert not may_use_sdk("gemini/gemini-2.0-flash", False, None)


def test_a_process_that_exits_right_after_building_the_lm_exits_cleanly() -> None:
    code = "import sigform as sf\nsf.LM('openai/x', api_base='http://127.0.0.1:9/v1')\nprint('ok')"
    for _ in range(3):  # the import is still running at exit
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                             timeout=120)
        assert (out.returncode, out.stdout.strip(), out.stderr.strip()) == (0, "ok", "")
