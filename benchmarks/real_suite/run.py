"""Run programs over the suite's tasks on one server and collect scored records.

A *program* is ``sigform:<adapter>`` (auto: the default; chat, json, xml, two-step),
``dspy:<adapter>`` (chat, json, xml; DSPy 3.4.1 in its own virtualenv; ``dspy:<adapter>@text``:
its ``model_type="text"`` LM), ``grammar`` (the 40-line chat script) or
``completion`` (the 40-line plain-text completion script for base models). A sigform adapter may
carry the LM's mode: ``sigform:json@text`` / ``@chat`` (without it: detected). Every program
gets the same server, demos, temperature 0 and ``max_tokens``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from benchmarks.real_suite import completion_script, grammar_script, sigform_side
from benchmarks.real_suite.scoring import fields_right, summarise
from benchmarks.real_suite.tasks import Task

DSPY_ADAPTERS = ("chat", "json", "xml")
ALL_PROGRAMS = (
    *(f"sigform:{a}" for a in sigform_side.ADAPTERS),
    *(f"sigform:{a}@{mode}" for mode in ("text", "chat") for a in sigform_side.ADAPTERS),
    "grammar",
    "completion",
    *(f"dspy:{a}" for a in DSPY_ADAPTERS),
    *(f"dspy:{a}@text" for a in DSPY_ADAPTERS),  # dspy.LM(model_type="text"): text completions
)
# what ``python -m benchmarks --local`` runs: the default (auto, the detected mode) and
# yesterday's default (auto@chat), every other adapter in both modes (for the embedded base model
# the detected mode is text, so the plain ``sigform:<adapter>`` rows would repeat the @text ones),
# both scripts and every DSPy row
LOCAL_PROGRAMS = (
    "sigform:auto",
    "sigform:auto@chat",
    *(f"sigform:{a}@{mode}" for a in sigform_side.ADAPTERS if a != "auto" for mode in ("text", "chat")),
    "completion",
    "grammar",
    *(f"dspy:{a}" for a in DSPY_ADAPTERS),
    *(f"dspy:{a}@text" for a in DSPY_ADAPTERS),
)
MAX_TOKENS = 256


def check_programs(programs: Sequence[str]) -> None:
    unknown = [p for p in programs if p.partition(":reasks=")[0] not in ALL_PROGRAMS]
    if unknown:
        raise ValueError(f"unknown program(s) {unknown}; choose from {ALL_PROGRAMS}")


@contextlib.contextmanager
def server(api_base: str | None, model: str | None = None) -> Iterator[tuple[str, str]]:
    """``(api_base, model)``: the given OpenAI-compatible server (its first listed model unless
    ``model`` is given), else a dedicated embedded one."""
    if api_base:
        yield api_base, model or "openai/" + _served_model(api_base)
        return
    import os

    import sigform.local

    # SIGFORM_BENCH_THREADS: the server's threads (1 holds up best on a busy machine)
    threads = int(os.environ.get("SIGFORM_BENCH_THREADS") or 0) or None
    with sigform.local.serve(n_threads=threads) as local:
        yield local.api_base, f"openai/{sigform.local.MODEL_NAME}"


def _served_model(api_base: str) -> str:
    import httpx

    listing = httpx.get(api_base.rstrip("/") + "/models", timeout=120).json()
    return str(listing["data"][0]["id"])


def score_records(records: list[dict[str, Any]], examples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {e["id"]: e for e in examples}
    for record in records:
        example = by_id[record["id"]]
        record["expect"] = example["expect"]
        record["expect_fields"] = list(example["expect"])
        if "value" in record:
            record["fields"] = fields_right(record["value"], example)
            record["right"] = all(record["fields"].values())
        else:
            record["fields"] = {}
            record["right"] = False
    return records


def run_program(
    program: str,
    tasks: Sequence[Task],
    examples: dict[str, list[dict[str, Any]]],
    *,
    api_base: str,
    model: str,
    max_tokens: int = MAX_TOKENS,
) -> dict[str, Any]:
    """``{"program", "tasks": {task: {"summary", "records"}}, "total"}`` for one program."""
    check_programs([program])
    if program.startswith("dspy:"):
        raw = _dspy(program.split(":", 1)[1], tasks, examples, api_base, model, max_tokens)
    else:
        raw = {}
        for task in tasks:
            if program in ("grammar", "completion"):
                script = grammar_script if program == "grammar" else completion_script
                raw[task.name] = script.run_task(
                    task, examples[task.name], api_base=api_base, model=model, max_tokens=max_tokens
                )
            else:
                raw[task.name] = sigform_side.run_task(
                    task,
                    examples[task.name],
                    adapter=program.split(":", 1)[1],
                    api_base=api_base,
                    model=model,
                    max_tokens=max_tokens,
                )
    per_task = {}
    every: list[dict[str, Any]] = []
    for task in tasks:
        records = score_records(raw[task.name], examples[task.name])
        per_task[task.name] = {"summary": summarise(records), "records": records}
        every += records
    return {"program": program, "tasks": per_task, "total": summarise(every)}


def _dspy(
    adapter: str,
    tasks: Sequence[Task],
    examples: dict[str, list[dict[str, Any]]],
    api_base: str,
    model: str,
    max_tokens: int,
) -> dict[str, list[dict[str, Any]]]:
    from benchmarks.common import ensure_dspy_venv, run_dspy

    ensure_dspy_venv(lambda msg: print(msg, flush=True))
    adapter, _, mode = adapter.partition("@")
    job = {
        "api_base": api_base,
        "model": model,
        "max_tokens": max_tokens,
        "adapter": adapter,
        "model_type": mode or "chat",
        "jobs": [{"task": t.name, "examples": examples[t.name]} for t in tasks],
    }
    result = run_dspy("real_suite.py", stdin=json.dumps(job), timeout=7200)
    return result["tasks"]


def run_all(
    programs: Sequence[str],
    tasks: Sequence[Task],
    *,
    split: str,
    limit: int | None = None,
    api_base: str | None = None,
    model: str | None = None,
    max_tokens: int = MAX_TOKENS,
    log: Callable[[str], None] = print,
    interleave: bool = False,
) -> dict[str, Any]:
    """Every program over every task (the first ``limit`` examples of each) on one server;
    ``interleave``: example by example, each program in turn (see :func:`run_interleaved`)."""
    check_programs(programs)
    examples = {t.name: t.examples(split)[:limit] for t in tasks}
    results = []
    with server(api_base, model) as (base, served):
        if interleave:
            count = sum(map(len, examples.values()))
            log(f"{', '.join(programs)} interleaved on {count} {split} examples ...")
            results = run_interleaved(
                programs, tasks, examples, api_base=base, model=served, max_tokens=max_tokens, log=log
            )
            for result in results:
                _log_total(result, log)
            programs = ()
        for program in programs:
            log(f"{program} on {sum(map(len, examples.values()))} {split} examples ...")
            result = run_program(program, tasks, examples, api_base=base, model=served, max_tokens=max_tokens)
            _log_total(result, log)
            results.append(result)
    return {
        "split": split,
        "limit": limit,
        "model": served,
        "max_tokens": max_tokens,
        "tasks": [t.name for t in tasks],
        "results": results,
    }


def _log_total(result: dict[str, Any], log: Callable[[str], None]) -> None:
    total = result["total"]
    log(
        f"  {result['program']}: {100 * total['accuracy']:.1f}% right, {total['parse_failures']} parse "
        f"failures, {total['seconds_per_example']:.2f} s/example (median {total['median_seconds']:.2f})"
    )


def run_interleaved(
    programs: Sequence[str],
    tasks: Sequence[Task],
    examples: dict[str, list[dict[str, Any]]],
    *,
    api_base: str,
    model: str,
    max_tokens: int = MAX_TOKENS,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Like :func:`run_program` for each program, but example by example, every program in turn:
    on a shared machine the load changes by the minute, and programs run one after another would
    be timed under different loads."""
    runs: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in programs}
    order = list(programs)
    for task in tasks:
        for i, example in enumerate(examples[task.name], 1):
            # forth, then back: the server caches one prompt, so a program run right after one
            # whose prompt differs pays for reading its own; this way each program follows each
            # of its neighbours as often (``--adapter auto,auto@chat --completion``: the default
            # and the script, whose documents are the same, each come after the chat prompt half
            # the time)
            for program in order:
                one = run_program(
                    program,
                    [task],
                    {task.name: [example]},
                    api_base=api_base,
                    model=model,
                    max_tokens=max_tokens,
                )
                runs[program].setdefault(task.name, {"records": []})["records"] += one["tasks"][task.name][
                    "records"
                ]
            order.reverse()
            if i % 4 == 0:
                log(f"  {task.name}: {i} of {len(examples[task.name])} examples")
    results = []
    for program in programs:
        per_task = {
            name: {"summary": summarise(t["records"]), "records": t["records"]}
            for name, t in runs[program].items()
        }
        every = [r for t in per_task.values() for r in t["records"]]
        results.append({"program": program, "tasks": per_task, "total": summarise(every)})
    return results
