"""Issue 12: the embedded model runs on machines whose CPU advertises a path it faults on.

The CPU check (a child process, cached per machine and library build) picks the server's
settings; a server that dies is restarted once with the safe settings; a second death is a
``LocalModelError`` naming the signal, the exit code and the log. The machine is simulated by the
fake ``llama_cpp`` of ``local_fakes`` (``FAKE_CPU=amx``: computing with the default
``use_extra_bufts=True`` dies with SIGSEGV), so this runs on any CI machine.
"""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path

import pytest

import sigform as sf
from sigform.errors import LocalModelError, ProviderError
from sigform.local import _cpu_check, _server_registry

THREADS = 1


def _verdicts(cache: Path) -> dict[str, dict[str, object]]:
    return json.loads((cache / _cpu_check.CHECK_FILE).read_text())["machines"]


def _seed(cache: Path, safe: bool) -> None:
    """Record a verdict as if an earlier check had run (e.g. one that missed the faulting path)."""
    cache.mkdir(parents=True, exist_ok=True)
    _cpu_check.record_safe(cache, "seeded") if safe else _cpu_check._store(
        cache / _cpu_check.CHECK_FILE, _cpu_check.machine_key(), _cpu_check.CpuVerdict(False, "seeded")
    )


# -- the decision ---------------------------------------------------------------------------

def test_a_working_cpu_keeps_the_fast_path_and_the_verdict_is_cached(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _server_registry.default_model_path()
    verdict = _cpu_check.use_safe_cpu(model, THREADS, fake)
    assert verdict.safe is False
    assert next(iter(_verdicts(fake).values()))["safe"] is False
    log = (fake / "cpu-check.log").read_text()
    assert "--sigform-probe" in log and "--sigform-safe-cpu" not in log  # one check, fast settings
    monkeypatch.setattr(_cpu_check, "_run_probe", lambda *a, **k: pytest.fail("checked twice"))
    assert _cpu_check.use_safe_cpu(model, THREADS, fake) == verdict


def test_a_cpu_that_faults_on_the_fast_path_gets_the_safe_settings(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CPU", "amx")
    verdict = _cpu_check.use_safe_cpu(_server_registry.default_model_path(), THREADS, fake)
    assert verdict.safe is True and "SIGSEGV" in verdict.reason
    assert "use_extra_bufts=False passed" in verdict.reason
    assert next(iter(_verdicts(fake).values()))["safe"] is True


def test_when_both_settings_fail_nothing_is_cached(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CPU", "broken")  # not a CPU-path problem: the server will say what it is
    verdict = _cpu_check.use_safe_cpu(_server_registry.default_model_path(), THREADS, fake)
    assert verdict.safe is False
    assert not (fake / _cpu_check.CHECK_FILE).exists()


def test_the_verdict_is_per_machine_and_library_build(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(fake, safe=True)
    model = _server_registry.default_model_path()
    assert _cpu_check.use_safe_cpu(model, THREADS, fake).safe is True
    # a rebuilt llama-cpp-python (or another machine sharing the home folder) is checked again
    monkeypatch.setattr(_cpu_check, "_library_stamp", lambda: "0.3.99@elsewhere@1")
    assert _cpu_check.use_safe_cpu(model, THREADS, fake).safe is False
    assert len(_verdicts(fake)) == 2


@pytest.mark.parametrize(
    "content",
    ['{"machines": {"KEY": {"safe": "yes", "reason": 1}}}', '{"machines": []}', "[1]", "not json"],
)
def test_a_malformed_verdict_file_counts_as_unchecked(fake: Path, content: str) -> None:
    fake.mkdir(parents=True, exist_ok=True)
    (fake / _cpu_check.CHECK_FILE).write_text(content.replace("KEY", _cpu_check.machine_key()))
    verdict = _cpu_check.use_safe_cpu(_server_registry.default_model_path(), THREADS, fake)
    assert verdict.safe is False and verdict.reason == "the default CPU path passed the check"


def test_the_shared_server_starts_with_the_machines_settings(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CPU", "amx")
    _server_registry.ensure_server()
    server = _server_registry.current_server()
    assert server is not None and server.safe_cpu
    log = server.log_path.read_text()
    assert "--sigform-safe-cpu" in log.splitlines()[0]  # the command line in the log says so
    assert 'FAKE PARAMS {"use_extra_bufts": false}' in log  # and the launcher applied it


def test_serve_can_be_told_the_settings(fake: Path) -> None:
    for safe in (True, False):
        with _server_registry.serve(safe_cpu=safe) as server:
            assert server.safe_cpu is safe
            assert f'FAKE PARAMS {{"use_extra_bufts": {json.dumps(not safe)}}}' in server.log_path.read_text()
    assert not (fake / _cpu_check.CHECK_FILE).exists()  # an explicit choice runs no check


# -- a server that dies on its first request ------------------------------------------------

def test_a_crash_on_the_first_request_restarts_once_with_safe_settings(
    fake: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("FAKE_CPU", "amx")
    _seed(fake, safe=False)  # the check passed, yet real requests fault
    lm = sf.LM("local", cache=False, retry_delay=0.01)
    _server_registry.ensure_server()
    first = _server_registry.current_server()
    assert first is not None and not first.safe_cpu
    with caplog.at_level(logging.WARNING, logger="sigform.local"):
        assert [c.text for c in lm("hello")] == ["fake answer"]  # answered by the restarted server
    second = _server_registry.current_server()
    assert second is not None and second.pid != first.pid and second.safe_cpu
    assert first.returncode == -signal.SIGSEGV
    assert "SIGSEGV" in caplog.text and "restarting it with the safe CPU settings" in caplog.text
    kept = fake / "local-server.previous.log"  # the crash report survives the restart
    assert str(kept) in caplog.text and "Fatal Python error: Segmentation fault" in kept.read_text()
    verdict = next(iter(_verdicts(fake).values()))
    assert verdict["safe"] is True and "SIGSEGV" in str(verdict["reason"])  # later processes start safe


def test_a_second_death_is_a_local_model_error_naming_signal_exit_code_and_log(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CPU", "broken")
    lm = sf.LM("local", cache=False, retry_delay=0.01)
    with pytest.raises(LocalModelError) as info:
        lm("hello")
    message = str(info.value)
    assert "died: signal SIGSEGV (11), exit code -11" in message
    assert "restarted 1 time(s) with the safe CPU settings" in message
    assert f"log: {fake / 'local-server.log'}" in message
    assert "Fatal Python error: Segmentation fault" in message  # the end of the log is quoted
    assert "safe CPU settings)" in message  # the server that died last ran the safe settings


def test_a_death_by_sigkill_is_not_blamed_on_the_cpu(fake: Path) -> None:
    _server_registry.ensure_server()
    first = _server_registry.current_server()
    assert first is not None and first._process is not None
    first._process.send_signal(signal.SIGKILL)  # e.g. the out-of-memory killer
    first._process.wait()
    _server_registry.ensure_server()
    assert _server_registry.current_server().safe_cpu  # type: ignore[union-attr]
    assert all(v["safe"] is False for v in _verdicts(fake).values())  # the machine keeps its fast path


def test_without_retries_the_crash_is_still_reported_as_such(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CPU", "broken")
    lm = sf.LM("local", cache=False, num_retries=0)
    with pytest.raises((LocalModelError, ProviderError)) as info:
        lm("hello")
    assert isinstance(info.value, LocalModelError), info.value
    assert "SIGSEGV" in str(info.value)


def test_a_live_server_that_answered_with_an_error_is_not_reported_as_dead(fake: Path) -> None:
    _server_registry.ensure_server()
    # its own error (say, an HTTP 500) reaches the caller as is
    assert _server_registry.death_report() is None
