"""Which llama.cpp settings work on this machine: checked once, in a child process, then cached.

llama.cpp built with native flags repacks the weights for the fastest instruction path the CPU
advertises (AMX on recent Xeons, ...). Some machines advertise a path that faults when used
(virtual machines whose CPU lists ``amx_tile`` but kill the process with SIGSEGV on the first
tile instruction). So before the first server starts on a machine, a child process loads the
model with the default settings and completes a short prompt. When that child dies and the same
check with the safe settings (``use_extra_bufts = False``: plain CPU buffers) passes, servers on
this machine use the safe settings; otherwise they keep the fast ones.

The verdict is cached in ``<cache>/cpu-check.json``, keyed by the machine (architecture, CPU
model and flags) and the library build (llama-cpp-python version and install time), so a shared
home folder serves several machines and a rebuilt library is checked again. The file is untrusted
input: anything malformed counts as "not checked yet". A server that crashes with the fast
settings later also records the safe verdict (:func:`record_safe`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import platform
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sigform import jsonvalue
from sigform.files import read_regular, write_atomic
from sigform.local._launcher import PROBE_FLAG, SAFE_CPU_FLAG
from sigform.local._process import describe_exit, spawn, terminate

log = logging.getLogger("sigform.local")

CHECK_FILE = "cpu-check.json"
PROBE_TIMEOUT = 300.0  # a loaded 2-core machine takes a few seconds; a hang must still end
_MAX_ENTRIES = 32
# fatal signals that mean "this code path cannot run here", unlike SIGKILL/SIGTERM from outside
CRASH_SIGNALS = frozenset(
    int(getattr(signal, name)) for name in ("SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE") if hasattr(signal, name)
)


@dataclass(frozen=True)
class CpuVerdict:
    """Whether servers on this machine need the safe settings, and why."""

    safe: bool
    reason: str


def _cpu_description() -> str:
    """The CPU model and feature flags of the first processor (Linux), else the platform's name."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor()
    wanted: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if wanted:
                break  # the first processor is enough: all cores of a machine share one model
            continue
        name, _, value = line.partition(":")
        name = name.strip()
        if name in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
            wanted[name] = value.strip()
    return json.dumps(wanted, sort_keys=True)


def _library_stamp() -> str:
    """The llama-cpp-python version and when its files were installed (a rebuild changes it)."""
    from importlib import metadata, util

    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "?"
    spec = util.find_spec("llama_cpp")
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    stamp = ""
    if origin is not None:
        lib = origin.parent / "lib"
        with contextlib.suppress(OSError):
            stamp = str((lib if lib.exists() else origin).stat().st_mtime_ns)
    return f"{version}@{origin}@{stamp}"


def machine_key() -> str:
    """A short hash of this machine's CPU and the installed llama.cpp build."""
    raw = "\n".join([platform.machine(), _cpu_description(), _library_stamp()])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _read(path: Path) -> dict[str, object]:
    try:
        data = jsonvalue.loads(read_regular(path))
    except (OSError, ValueError):
        return {}
    entries = data.get("machines") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}


def _cached(path: Path, key: str) -> CpuVerdict | None:
    entry = _read(path).get(key)
    if not isinstance(entry, dict):
        return None
    safe, reason = entry.get("safe"), entry.get("reason")
    if not isinstance(safe, bool) or not isinstance(reason, str):
        return None
    return CpuVerdict(safe, reason)


def _store(path: Path, key: str, verdict: CpuVerdict) -> None:
    entries = _read(path)
    entries.pop(key, None)
    entries[key] = {"safe": verdict.safe, "reason": verdict.reason, "checked_at": time.time()}
    kept = dict(list(entries.items())[-_MAX_ENTRIES:])  # oldest first: a shared home stays small
    with contextlib.suppress(OSError):  # the cache only saves time; the next start checks again
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"machines": kept}, indent=2).encode())


def _run_probe(model_path: Path, threads: int, safe: bool, log_path: Path) -> int | None:
    """Run the check child; its exit status (None when it did not finish in time)."""
    args = [PROBE_FLAG, str(model_path), str(threads), *([SAFE_CPU_FLAG] if safe else [])]
    proc = spawn(args, log_path, append=True)
    try:
        return proc.wait(PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        terminate(proc, 5.0)
        return None


def _check(model_path: Path, threads: int, log_path: Path) -> CpuVerdict | None:
    """Probe the fast settings, then the safe ones if the fast ones died; None when both fail
    (then the problem is not the CPU path, and the server's own start-up error will say what it is)."""
    fast = _run_probe(model_path, threads, safe=False, log_path=log_path)
    if fast == 0:
        return CpuVerdict(False, "the default CPU path passed the check")
    safe = _run_probe(model_path, threads, safe=True, log_path=log_path)
    fast_said = "did not finish" if fast is None else f"died ({describe_exit(fast)})"
    if safe != 0:
        log.warning("the local model check failed with both settings (default: %s; safe: %s); see %s",
                    fast_said, "did not finish" if safe is None else describe_exit(safe), log_path)
        return None
    return CpuVerdict(True, f"with the default CPU path the check {fast_said}; use_extra_bufts=False passed")


def use_safe_cpu(model_path: Path, threads: int, directory: Path) -> CpuVerdict:
    """Whether servers on this machine must use the safe settings: cached, or checked now (a few
    seconds, once per machine and library build; concurrent processes wait for one check)."""
    from filelock import FileLock

    path = directory / CHECK_FILE
    key = machine_key()
    verdict = _cached(path, key)
    if verdict is not None:
        return verdict
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        verdict = _cached(path, key)  # another process may have checked while we waited
        if verdict is not None:
            return verdict
        log.info("checking which llama.cpp settings work on this machine (once)")
        checked = _check(model_path, threads, directory / "cpu-check.log")
        if checked is None:
            return CpuVerdict(False, "the check failed with both settings; not cached")
        _store(path, key, checked)
        if checked.safe:
            log.warning("this machine's CPU cannot run llama.cpp's default path (%s); the local model "
                        "server uses safe settings (slower prompt processing)", checked.reason)
        return checked


def record_safe(directory: Path, reason: str) -> None:
    """Remember that this machine needs the safe settings (a fast-settings server crashed)."""
    from filelock import FileLock

    path = directory / CHECK_FILE
    with FileLock(str(path) + ".lock"):
        _store(path, machine_key(), CpuVerdict(True, reason))
