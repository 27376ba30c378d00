"""8. The demo task on the embedded local model (Gemma 3 270M), sigform vs DSPy (``--local``).

The task (``sigform/cli/demo_data.jsonl``, demos ``demo_demos.jsonl``): extract ``payee``,
``amount_usd``, ``date`` and ``category`` (a Literal) from a short text. Both sides call the same
server (a dedicated ``sigform.local.serve()``, model alias ``sigform.local.MODEL_NAME``) with the same
demos, their default ChatAdapter (with their own re-ask/fallback behaviour: what a user gets),
temperature 0, the same ``max_tokens``, cache off. DSPy runs with ``engine="litellm"`` here: its
default native client sends the limit as ``max_completion_tokens``, which the llama.cpp server
ignores, so generation would run to the context limit (minutes per example). Generated tokens
are the server's reported ``completion_tokens`` summed over every call each LM made (re-asks
and fallbacks included), divided by the number of examples. An example is accurate when all
four fields are right (payee and date after stripping, case-insensitive payee; amount within
half a cent; category exact). A parse failure is an example that raised instead of returning values.

It also reports the server's tokens/s with llama.cpp's default CPU path and with the safe
settings that ``sigform.local`` picks where the default path crashes (``benchmarks.local_speed``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from benchmarks import local_speed
from benchmarks.common import ROOT, Row, Section, run_dspy

DATA = ROOT / "sigform" / "cli"
FIELDS = ("payee", "amount_usd", "date", "category")
MAX_TOKENS = 200


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def read(path: Path) -> list[dict[str, Any]]:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    return read(DATA / "demo_demos.jsonl"), read(DATA / "demo_data.jsonl")


def field_right(name: str, got: Any, want: Any) -> bool:
    if got is None:
        return False
    if name == "amount_usd":
        try:
            return abs(float(got) - float(want)) < 0.005
        except (TypeError, ValueError):
            return False
    if name == "payee":
        return str(got).strip().lower() == str(want).strip().lower()
    return str(got).strip() == str(want).strip()


def score(outcomes: list[dict[str, Any]], examples: list[dict[str, Any]]) -> dict[str, Any]:
    exact = fields = failures = 0
    for outcome, example in zip(outcomes, examples, strict=True):
        if "error" in outcome:
            failures += 1
            continue
        right = [field_right(f, outcome["value"].get(f), example[f]) for f in FIELDS]
        fields += sum(right)
        exact += all(right)
    n = len(examples)
    return {"accuracy": exact / n, "field_accuracy": fields / (n * len(FIELDS)), "parse_failures": failures}


def sigform_side(api_base: str, model: str, demos: list[dict[str, Any]], examples: list[dict[str, Any]]
                 ) -> dict[str, Any]:
    import sigform as sf

    class Expense(sf.Signature):
        """Extract the expense described in the text."""

        text: str = sf.InputField()
        payee: str = sf.OutputField(desc="who was paid")
        amount_usd: float = sf.OutputField(desc="amount in US dollars")
        date: str = sf.OutputField(desc="YYYY-MM-DD")
        category: Literal["meals", "travel", "office", "software"] = sf.OutputField()

    lm = sf.LM(model, api_base=api_base, api_key="local", cache=False, temperature=0.0, max_tokens=MAX_TOKENS)
    program = sf.Predict(Expense, lm=lm, demos=demos)
    outcomes: list[dict[str, Any]] = []
    start = time.perf_counter()
    for example in examples:
        try:
            pred = program(text=example["text"])
            outcomes.append({"value": {f: getattr(pred, f) for f in FIELDS}})
        except Exception as exc:  # a failed example is a parse failure for the score
            outcomes.append({"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    return {
        "outcomes": outcomes, "completion_tokens": lm.usage.completion_tokens, "lm_calls": lm.stats["calls"],
        "seconds": time.perf_counter() - start,
    }


def run(with_dspy: bool = True) -> Section:
    import sigform.local

    section = Section("local_model")
    demos, examples = load()
    model = f"openai/{sigform.local.MODEL_NAME}"
    # a dedicated server (not the shared one of ensure_server(), which another process may own
    # and stop at its exit in the middle of this run)
    with sigform.local.serve() as server:
        api_base = server.api_base
        ours = sigform_side(api_base, model, demos, examples)
        theirs = None
        if with_dspy:
            job = {"api_base": api_base, "model": model, "max_tokens": MAX_TOKENS, "engine": "litellm"}
            job.update(demos=demos, examples=examples)
            theirs = run_dspy("local_model.py", stdin=json.dumps(job), timeout=1800)
    n = len(examples)
    s_mine = score(ours["outcomes"], examples)
    s_other = score(theirs["outcomes"], examples) if theirs else None
    tok_mine = ours["completion_tokens"] / n
    tok_other = theirs["completion_tokens"] / n if theirs else None
    section.rows.append(Row(
        "8 local model", f"accuracy, all 4 fields right ({n} examples)", "%", 100 * s_mine["accuracy"],
        100 * s_other["accuracy"] if s_other else None, None, ratio_desc="",
        target=">= DSPy", met=(s_mine["accuracy"] >= s_other["accuracy"]) if s_other else None,
    ))
    section.rows.append(Row(
        "8 local model", "field accuracy", "%", 100 * s_mine["field_accuracy"],
        100 * s_other["field_accuracy"] if s_other else None, None, ratio_desc="",
    ))
    section.rows.append(Row(
        "8 local model", "parse failures", "examples", s_mine["parse_failures"],
        s_other["parse_failures"] if s_other else None, None, ratio_desc="",
    ))
    section.rows.append(Row(
        "8 local model", "generated tokens per example", "tokens", tok_mine, tok_other,
        (tok_other / tok_mine) if (tok_other and tok_mine) else None, ratio_desc="DSPy / sigform",
        target="fewer than DSPy", met=(tok_mine < tok_other) if tok_other else None,
    ))
    section.rows.append(Row(
        "8 local model", "LM calls per example", "calls", ours["lm_calls"] / n,
        theirs["lm_calls"] / n if theirs else None, None, ratio_desc="",
    ))
    section.rows.append(Row(
        "8 local model", "wall time per example", "s", ours["seconds"] / n,
        theirs["seconds"] / n if theirs else None,
        (theirs["seconds"] / ours["seconds"]) if theirs else None,
    ))
    speed = local_speed.run()
    section.rows.extend(speed_rows(speed))
    section.details = {
        "sigform": ours, "dspy": theirs, "max_tokens": MAX_TOKENS, "model": model,
        "cpu_settings_speed": speed,
    }
    return section


def speed_rows(speed: dict[str, dict[str, Any]]) -> list[Row]:
    """Tokens/s rows for the default and the safe CPU settings (a crashed setting has a note)."""
    rows = []
    for key, label in (("prompt_tokens_per_s", "prompt"), ("generated_tokens_per_s", "generated")):
        default, safe = speed["default"].get(key), speed["safe"].get(key)
        for setting, value in (("default CPU path", default), ("safe CPU settings", safe)):
            rows.append(Row(
                "8 local model", f"{label} tokens/s, {setting}", "tokens/s", value, None,
                (safe / default) if (setting == "safe CPU settings" and safe and default) else None,
                ratio_desc="safe / default" if setting == "safe CPU settings" else "",
                note=speed["default" if setting == "default CPU path" else "safe"].get("error", ""),
            ))
    return rows
