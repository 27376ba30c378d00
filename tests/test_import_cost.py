"""Import cost, checked structurally (no timings): what a plain-text program must never load.

A fresh interpreter builds, formats and calls a plain-text Predict (the first-call benchmark's
path: LM over the fast path, a loopback fake server) and reports which of the deferred
modules got imported. With the chat adapter none of them is loaded; with the default adapter on a
model that constrains decoding to a schema, the JSON adapter (its choice there) and nothing else.
Each of them is loaded on first use only:

* the special types (pydantic models: Image/Audio/File/History/Reasoning/ToolCalls, Media) --
  ``sigform.types`` exposes them lazily; adapters look for media or ToolCalls only once their
  module is loaded (no instance can exist before); string signatures resolve only the special
  type names they mention;
* the other adapters and the stream parser (``sigform.adapters`` is lazy);
* batching, executors, progress bars (rich), BestOfN/Refine, voting (``sigform.predict`` is lazy);
* stdlib helpers of error paths (difflib: "did you mean" for unknown inputs).

The positive checks below make sure the deferral is not a silent loss: media values still become
content parts and ToolCalls outputs are still recognised in fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sigform.testing.providers import OpenAIChatFake, Reply

ROOT = Path(__file__).resolve().parents[1]

DEFERRED = (
    "sigform.types.media",
    "sigform.types.media_sources",
    "sigform.types.image",
    "sigform.types.audio",
    "sigform.types.file",
    "sigform.types.history",
    "sigform.types.reasoning",
    "sigform.types.tool_calls",
    "sigform.adapters.json_adapter",
    "sigform.adapters.xml",
    "sigform.adapters.two_step",
    "sigform.adapters.streaming",
    "sigform.predict.batch",
    "sigform.predict.executors",
    "sigform.predict.progress",
    "sigform.predict.best_of_n",
    "sigform.predict.voting",
    "sigform.predict.chain_of_thought",
    "rich",
    "jinja2.sandbox",
    "litellm",
    "openai",  # the fast path is sigform's own (sigform.lm.transport)
    "httpx",  # sync requests go over http.client (sigform.lm.http11)
    "httpx2",
    "aiohttp",  # async requests only
    "difflib",
)

PLAIN_PROGRAM = """
import json, sys
import sigform as sf

class Small(sf.Signature):
    \"\"\"Answer the question.\"\"\"
    question: str = sf.InputField()
    answer: str = sf.OutputField()

lm = sf.LM({model!r}, api_base={api_base!r}, api_key="k", cache=False, temperature=0.0)
assert sf.Predict(Small, lm=lm{adapter})(question="What is the capital of France?").answer == "Paris"
typed = sf.Predict("question, context: list[str] -> answer: int, sure: bool")
sf.ChatAdapter().format(typed.signature, [], {{"question": "How many?", "context": ["a", "b"]}})
print(json.dumps(sorted(m for m in {deferred!r} if m in sys.modules)))
"""


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("adapter", "reply", "expected"),
    [
        (", adapter=sf.ChatAdapter()", "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]", []),
        # the default adapter answers in constrained JSON where the model can: that module only
        ("", '{"answer": "Paris"}', ["sigform.adapters.json_adapter"]),
    ],
    ids=["chat", "default"],
)
def test_a_plain_text_first_call_imports_none_of_the_deferred_modules(
    adapter: str, reply: str, expected: list[str]
) -> None:
    with OpenAIChatFake(Reply(reply)) as fake:
        model = fake.model("gpt-4o-mini")
        code = PLAIN_PROGRAM.format(model=model, api_base=fake.api_base, deferred=DEFERRED, adapter=adapter)
        loaded = json.loads(_fresh(code))
        assert len(fake.requests) == 1  # the call really went out
    assert loaded == expected


def test_media_values_still_become_content_parts_in_a_fresh_process():
    code = """
import base64, json, sys
import sigform as sf
assert "sigform.types.media" not in sys.modules
png = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
sig = sf.make_signature("question, picture: Image -> answer")
messages = sf.ChatAdapter().format(sig, [], {"question": "What is it?", "picture": sf.Image.from_bytes(png)})
print(json.dumps([p.get("type") for p in messages[-1]["content"]]))
"""
    assert "image_url" in json.loads(_fresh(code))


def test_toolcalls_outputs_are_still_recognised_in_a_fresh_process():
    code = """
import sys
import sigform as sf
from sigform.adapters.native_tools import _is_calls_annotation
plain = sf.make_signature("question -> answer")
assert "sigform.types.tool_calls" not in sys.modules
with_calls = sf.make_signature("question -> calls: ToolCalls")
print(_is_calls_annotation(plain.output_fields["answer"].annotation),
      _is_calls_annotation(with_calls.output_fields["calls"].annotation))
"""
    assert _fresh(code) == "False True"


def test_signature_namespace_resolves_only_the_names_a_signature_mentions():
    from sigform.signatures.namespace import signature_namespace
    from sigform.types import History, Image, ToolCalls

    assert signature_namespace("question -> answer: int") == {}
    mentioned = signature_namespace("q, img: Image -> calls: ToolCalls")
    assert mentioned == {"Image": Image, "ToolCalls": ToolCalls}
    everything = signature_namespace()
    assert set(everything) == {"Image", "Audio", "File", "History", "Reasoning", "ToolCalls"}
    assert everything["History"] is History


@pytest.mark.parametrize("package", ["sigform.types", "sigform.adapters", "sigform.predict"])
def test_lazy_packages_export_exactly_their_tables(package: str):
    import importlib

    module = importlib.import_module(package)
    lazy = getattr(module, "_EXPORTS", None) or getattr(module, "_LAZY", {})
    assert set(lazy) <= set(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018
