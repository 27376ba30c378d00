"""Review findings in the CLI: model text printed as rich markup; nonsense counts accepted."""

from __future__ import annotations

import pytest

import sigform as sf
from sigform.cli import demo, main


def test_model_output_with_brackets_is_printed_verbatim(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a payee like "ACME [/x] Co" was read as rich markup: MarkupError ended the demo
    examples = demo.load_examples("demo_data.jsonl")[:1]
    pred = sf.Prediction({**examples[0].to_dict("labels"), "payee": "ACME [/x] [bold]Co"})

    def fake_evaluate(**kwargs: object) -> demo.DemoReport:
        return demo.DemoReport("chat", "scripted", examples, [pred], {}, 0.1, 3)

    monkeypatch.setattr(demo, "evaluate", fake_evaluate)
    assert demo.run_demo(model="scripted") == 0
    assert "ACME [/x] [bold]Co" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--limit", "0"], ["--limit", "-2"], ["--threads", "0"]])
def test_counts_must_be_positive(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # --limit -2 silently dropped the last two examples; --threads 0 silently meant 8
    with pytest.raises(SystemExit) as info:
        main(["demo", *args])
    assert info.value.code == 2 and "positive" in capsys.readouterr().err
