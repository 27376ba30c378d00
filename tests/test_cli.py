"""The main job: ``sigform demo`` on the embedded local model, and its scoring."""

from __future__ import annotations

import datetime
import subprocess
import sys

import pytest

import sigform as sf
from sigform.cli import demo


def test_bundled_data_loads_as_typed_examples():
    data = demo.load_examples("demo_data.jsonl")
    demos = demo.load_examples("demo_demos.jsonl")
    assert len(data) >= 10 and len(demos) >= 3
    assert all(isinstance(e["date"], datetime.date) for e in data + demos)
    assert {e["category"] for e in data} == {"meals", "travel", "office", "software"}
    assert data[0].to_dict("inputs") == {"text": data[0]["text"]}


def test_score_compares_field_by_field():
    label = demo.load_examples("demo_data.jsonl")[0]
    right = sf.Prediction({**label.to_dict("labels"), "payee": label["payee"].upper()})
    assert demo.score(right, label).exact  # case-insensitive strings
    wrong = sf.Prediction({**label.to_dict("labels"), "amount_usd": label["amount_usd"] + 0.01})
    scored = demo.score(wrong, label)
    assert not scored.exact and scored.matches == {
        "payee": True,
        "amount_usd": False,
        "date": True,
        "category": True,
    }
    assert not any(demo.score(None, label).matches.values())


def test_demo_prompt_has_demos_and_typed_hints():
    program = demo.build_program("chat", lm=None)
    messages = program.adapter.format(
        program.signature, program.demos, {"text": "Paid $1 to Bo on 2024-01-01."}
    )
    assert messages[0]["role"] == "system" and "YYYY-MM-DD" in messages[0]["content"]
    assert len(messages) == 2 + 2 * len(program.demos)


@pytest.mark.local_model
def test_demo_command_runs_on_the_local_model():
    out = subprocess.run(
        [sys.executable, "-m", "sigform.cli", "demo", "--limit", "2", "--show-prompt"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "exact records:" in out.stdout and "generated tokens:" in out.stdout
    assert "[[ ## payee ## ]]" in out.stdout  # --show-prompt printed the exchange


@pytest.mark.local_model
def test_evaluate_reports_accuracy_tokens_and_time():
    report = demo.evaluate(adapter="chat", limit=2, progress=False)
    assert len(report.predictions) == 2
    assert 0.0 <= report.accuracy <= 1.0
    assert report.completion_tokens > 0 and report.seconds > 0
