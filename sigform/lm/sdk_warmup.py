"""The openai SDK imported in the background as soon as an LM that will use it is built.

Importing the SDK and building its first client is most of a fresh process's first call (about
0.5 s on a quiet machine; ``import sigform`` itself is a few milliseconds). An LM on the fast
path starts that work in :mod:`sigform.warmup`'s background thread when it is built, so that
whatever the program does next -- a notebook waiting for its next cell, a script loading its
data -- overlaps with it; a ``Predict`` call waits for the thread, and a bare LM request finds
the modules loaded (or waits on Python's import lock for the rest).
Nothing is sent and no credential is read: the throwaway client gets a placeholder key and an
address it never connects to. A failure here is ignored; the first request imports the SDK
again and reports the error where it belongs.
"""

from __future__ import annotations

import sys

from sigform import warmup

__all__ = ["SDK_TASK", "may_use_sdk", "warm_up_sdk"]

SDK_TASK = "the OpenAI SDK"


def may_use_sdk(model: str, has_api_base: bool, fast_path: bool | None) -> bool:
    """Whether an LM for ``model`` will likely send through the openai SDK (a wrong guess only
    costs an unneeded background import)."""
    if fast_path is False:
        return False
    if fast_path or model == "local":
        return True
    from sigform.lm.openai_backend import FAST_PROVIDERS
    from sigform.lm.routing import BASELESS_FAST

    prefix, sep, _ = model.partition("/")
    return bool(sep) and prefix in FAST_PROVIDERS and (has_api_base or prefix in BASELESS_FAST)


def warm_up_sdk() -> None:
    """Import the SDK in :mod:`sigform.warmup`'s background thread (once per process; not if
    already loaded)."""
    if "openai" not in sys.modules:
        warmup.start(SDK_TASK)


def _build_client() -> None:
    from sigform.lm.sdk_clients import sync_client

    # building a client loads its HTTP transport (connection pool, protocol modules) and the
    # TLS context every client of the process shares
    sync_client(api_key="sigform-warm-up", base_url="http://127.0.0.1:9/v1", max_retries=0).close()


warmup.register(SDK_TASK, _build_client)
