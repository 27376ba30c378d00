"""Run the measurements in order, each in its own try block, and collect their sections.

``Options`` holds the repeat counts; ``Options.quick()`` is the tiny configuration the smoke
test uses (no timing is asserted anywhere).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import DSPY_VERSION, Section, ensure_dspy_venv, venv_python

NAMES = (
    "import", "first_call", "format_parse", "e2e_call", "throughput", "memory", "corpus", "adversarial_parse",
    "adversarial_coerce", "stream_parse", "ray_scale", "mcp", "local_model", "real_suite", "fewshot",
)
LOCAL = ("local_model", "real_suite", "fewshot")  # on the embedded model: only with --local
DEFAULT = tuple(n for n in NAMES if n not in LOCAL)


@dataclass
class Options:
    only: Sequence[str] = DEFAULT
    with_dspy: bool = True
    import_repeats: int = 9
    first_call_repeats: int = 5
    format_repeats: int = 300
    format_rounds: int = 5
    e2e_calls: int = 150
    e2e_rounds: int = 7
    e2e_litellm_calls: int = 60
    throughput_calls: int = 500
    throughput_rounds: int = 5
    memory_calls: int = 10_000
    ray_rows: int = 5_000
    adversarial_sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    adversarial_repeats: int = 3
    coerce_size: int = 1_000_000
    coerce_repeats: int = 5
    stream_sizes: tuple[int, ...] = (10_000, 100_000, 400_000, 1_000_000)
    mcp_rounds: int = 7
    log: Callable[[str], None] = field(default=print)

    @classmethod
    def quick(cls, **overrides: object) -> Options:
        base = cls(
            import_repeats=1, first_call_repeats=1, format_repeats=5, format_rounds=1, e2e_calls=3,
            e2e_rounds=1, e2e_litellm_calls=2, throughput_calls=20, throughput_rounds=1, memory_calls=30,
            adversarial_sizes=(1_000, 10_000), adversarial_repeats=1, coerce_size=10_000, coerce_repeats=1,
            ray_rows=200, stream_sizes=(1_000,), mcp_rounds=1,
        )
        for key, value in overrides.items():
            setattr(base, key, value)
        return base


def _runners(opts: Options, dspy_python: Path | None) -> dict[str, Callable[[], Section]]:
    from benchmarks import (
        adversarial_coerce,
        adversarial_parse,
        corpus,
        e2e_call,
        fewshot,
        first_call,
        format_parse,
        import_time,
        local_model,
        mcp_overhead,
        memory,
        ray_scale,
        real_model,
        stream_parse,
        throughput,
    )

    with_dspy = dspy_python is not None
    return {
        "import": lambda: import_time.run(opts.import_repeats, dspy_python),
        "first_call": lambda: first_call.run(opts.first_call_repeats, dspy_python),
        "format_parse": lambda: format_parse.run(opts.format_repeats, opts.format_rounds, with_dspy),
        "e2e_call": lambda: e2e_call.run(opts.e2e_calls, opts.e2e_rounds, opts.e2e_litellm_calls, with_dspy),
        "throughput": lambda: throughput.run(n=opts.throughput_calls, rounds=opts.throughput_rounds,
                                             with_dspy=with_dspy),
        "memory": lambda: memory.run(opts.memory_calls, with_dspy),
        "corpus": lambda: corpus.run(with_dspy),
        "adversarial_parse": lambda: adversarial_parse.run(opts.adversarial_sizes, opts.adversarial_repeats),
        "adversarial_coerce": lambda: adversarial_coerce.run(opts.coerce_size, opts.coerce_repeats),
        "stream_parse": lambda: stream_parse.run(opts.stream_sizes),
        "ray_scale": lambda: ray_scale.run(opts.ray_rows),
        "mcp": lambda: mcp_overhead.run(opts.mcp_rounds),
        "local_model": lambda: local_model.run(with_dspy),
        "real_suite": lambda: real_model.run(with_dspy),
        "fewshot": lambda: fewshot.run(with_dspy, log=opts.log),
    }


def _version(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def environment(with_dspy: bool) -> dict[str, object]:
    meta: dict[str, object] = {
        "python": sys.version.split()[0],
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
        "load_average_start": os.getloadavg(),
        "versions": {n: _version(n) for n in ("sigform", "litellm", "openai", "httpx", "pydantic")},
    }
    if with_dspy:
        code = "import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in "
        code += "('dspy', 'litellm', 'openai', 'httpx', 'pydantic')}))"
        import subprocess

        out = subprocess.run([str(venv_python()), "-c", code], capture_output=True, text=True)
        meta["dspy_venv_versions"] = out.stdout.strip()
    return meta


def run_suite(opts: Options) -> tuple[list[Section], dict[str, object]]:
    """Run the selected measurements; a failing one is recorded (``details["error"]``), not fatal."""
    unknown = set(opts.only) - set(NAMES)
    if unknown:
        raise ValueError(f"unknown measurements {sorted(unknown)}; choose from {NAMES}")
    dspy_python = ensure_dspy_venv(opts.log) if opts.with_dspy else None
    meta = environment(dspy_python is not None)
    meta["dspy"] = DSPY_VERSION if dspy_python else None
    runners = _runners(opts, dspy_python)
    sections: list[Section] = []
    started = time.perf_counter()
    for name in NAMES:
        if name not in opts.only:
            continue
        opts.log(f"[{time.perf_counter() - started:6.1f}s] {name} ...")
        t0 = time.perf_counter()
        try:
            section = runners[name]()
        except Exception as exc:  # one broken measurement must not lose the others
            section = Section(name, details={"error": f"{type(exc).__name__}: {exc}"[:2000]})
            opts.log(traceback.format_exc())
        section.details["seconds"] = round(time.perf_counter() - t0, 1)
        sections.append(section)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    meta["load_average_end"] = os.getloadavg()
    meta["finished"] = dt.datetime.now().isoformat(timespec="seconds")
    return sections, meta


__all__ = ["DEFAULT", "LOCAL", "NAMES", "Options", "run_suite"]
