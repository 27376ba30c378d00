"""sigform's side of the suite: one ``sf.Predict`` per task with the task's demos, one adapter.

Every program gets the same LM settings as the other sides (temperature 0, ``max_tokens``, cache
off) and the adapter's own retry/fallback behaviour: what a user gets. Calls and tokens per
example are read from the LM's counters around the example (re-asks and fallbacks included;
rejected requests count as calls).
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.real_suite.tasks import Task, to_plain

ADAPTERS = ("auto", "chat", "json", "xml", "two-step")  # auto: the default adapter


def split_mode(name: str) -> tuple[str, str | None]:
    """``json@text`` -> ``("json", "text")``: the adapter and the LM's ``model_type`` (None:
    detected, what a user gets)."""
    name, _, mode = name.partition("@")
    if mode not in ("", "text", "chat"):
        raise ValueError(f"unknown mode {mode!r} in {name!r}; use @text or @chat")
    return name, mode or None


def make_adapter(name: str) -> Any:
    """The adapter named ``name``, optionally with its re-asks set: ``auto`` or ``auto:reasks=0``
    (no value re-ask: at most one call per example)."""
    import sigform as sf

    name, _, option = name.partition(":")
    options: dict[str, Any] = {}
    if option:
        key, _, value = option.partition("=")
        if key != "reasks" or not value.isdigit():
            raise ValueError(f"unknown adapter option {option!r}; the one option is reasks=N")
        options["max_reasks"] = int(value)

    factories = {
        "auto": sf.AutoAdapter,
        "chat": sf.ChatAdapter,
        "json": sf.JSONAdapter,
        "xml": sf.XMLAdapter,
        "two-step": sf.TwoStepAdapter,
    }
    if name not in factories:
        raise ValueError(f"unknown sigform adapter {name!r}; choose from {ADAPTERS}")
    return factories[name](**options)


def _extra_settings() -> dict[str, Any]:
    """Request settings to try on the dev split: ``SIGFORM_BENCH_LM='{"repeat_penalty": 1.0}'``."""
    import json
    import os

    return dict(json.loads(os.environ.get("SIGFORM_BENCH_LM") or "{}"))


def signature_of(task: Task) -> Any:
    import sigform as sf

    fields: dict[str, Any] = {"text": (str, sf.InputField(desc=task.input_desc))}
    for out in task.outputs:
        fields[out.name] = (out.annotation, sf.OutputField(desc=out.desc) if out.desc else sf.OutputField())
    return sf.make_signature(fields, task.instructions, name=f"{task.name.title()}Task")


def _sent(lm: Any) -> tuple[int, int, int]:
    return lm.stats["calls"] + lm.stats["errors"], lm.usage.prompt_tokens, lm.usage.completion_tokens


def run_task(
    task: Task, examples: list[dict[str, Any]], *, adapter: str, api_base: str, model: str, max_tokens: int
) -> list[dict[str, Any]]:
    """One record per example: the plain-JSON value or the error, and what it cost."""
    import sigform as sf

    adapter, mode = split_mode(adapter)
    lm = sf.LM(
        model,
        api_base=api_base,
        api_key="local",
        cache=False,
        temperature=0.0,
        max_tokens=max_tokens,
        model_type=mode,
        **_extra_settings(),
    )
    demos = [{"text": d["text"], **task.typed(d["expect"])} for d in task.examples("demos")]
    program = sf.Predict(signature_of(task), lm=lm, demos=demos, adapter=make_adapter(adapter))
    return run_examples(program, lm, task, examples)


def run_examples(program: Any, lm: Any, task: Task, examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``program`` (which sends its requests through ``lm``) over ``examples``: one record each."""
    records: list[dict[str, Any]] = []
    for example in examples:
        calls0, prompt0, completion0 = _sent(lm)
        start = time.perf_counter()
        record: dict[str, Any] = {"id": example["id"]}
        try:
            pred = program(text=example["text"])
            record["value"] = {name: to_plain(getattr(pred, name)) for name in task.output_names}
        except Exception as exc:  # a failed example counts as a parse failure
            record["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
            raw = getattr(exc, "raw", None)
            if raw is not None:
                record["raw"] = str(raw)[:1500]
        record["seconds"] = time.perf_counter() - start
        calls, prompt, completion = _sent(lm)
        record.update(
            calls=calls - calls0, prompt_tokens=prompt - prompt0, completion_tokens=completion - completion0
        )
        records.append(record)
    return records
