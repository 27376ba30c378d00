"""The small JSON state file that lets several processes share one local server.

``<cache>/local-server.json`` records the server's port, pid, owning process, model path and
start time. It is only a hint: a record naming another host than 127.0.0.1 or with mistyped
fields counts as absent, and before reuse the caller checks that the pid is alive, is our server
and that the port answers with our model alias (see ``_server_registry``). Writes are atomic
(temp file + rename); an unreadable or malformed file counts as absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from sigform.files import read_regular, write_atomic

STATE_FILE = "local-server.json"
# the one address the shared server binds (start_server's default): another loopback name in a
# record ("::1", "localhost") could reach a different program listening on the same port number
# there, which the ownership check (the pid holds *a* socket listening on that port) would pass
SHARED_HOST = "127.0.0.1"


def cache_dir() -> Path:
    """sigform's cache directory, as for the response cache: the ``cache_dir`` setting, else
    ``$SIGFORM_CACHE_DIR``, else ``~/.cache/sigform``."""
    from sigform.settings import get_setting

    configured = get_setting("cache_dir") or os.environ.get("SIGFORM_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sigform"


def state_path() -> Path:
    """Path of the shared-server state file in :func:`cache_dir`."""
    return cache_dir() / STATE_FILE


@dataclass(frozen=True)
class ServerState:
    """What one process tells the others about the shared server it started."""

    port: int
    pid: int
    owner_pid: int
    model_path: str
    alias: str
    started_at: float
    log_path: str
    host: str = "127.0.0.1"

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def read_state(path: Path | None = None) -> ServerState | None:
    """The recorded state, or ``None`` when the file is missing, unreadable or malformed."""
    import pydantic

    try:  # a FIFO here is ignored, never waited on; every field's type checked (strict)
        data = read_regular(path or state_path())
        state = pydantic.TypeAdapter(ServerState).validate_json(data, strict=True)
    except (OSError, ValueError):
        return None
    if not 0 < state.port < 65536 or state.pid <= 0 or state.host != SHARED_HOST:
        return None  # the shared server only ever binds 127.0.0.1: prompts stay with it
    return state


def write_state(state: ServerState, path: Path | None = None) -> None:
    """Atomically record ``state``."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(asdict(state), indent=2).encode())  # no predictable temp name


def clear_state(pid: int | None = None, path: Path | None = None) -> None:
    """Remove the state file; with ``pid``, only if it still describes that server."""
    path = path or state_path()
    if pid is not None:
        current = read_state(path)
        if current is None or current.pid != pid:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def pid_alive(pid: int) -> bool:
    """True if a process with ``pid`` exists and is not a zombie (it may belong to another user)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        from sigform.local._launcher import windows_pid_alive

        return windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, but is not ours to signal
        return True
    except OSError:
        return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    # A dead child that its parent has not reaped yet still answers kill(pid, 0).
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (macOS) or the process just went away
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
