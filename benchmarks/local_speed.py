"""Tokens/s of the embedded model with llama.cpp's default CPU path and with the safe settings.

The safe settings (``use_extra_bufts=False``, chosen by ``sigform.local``'s CPU check where the
default path crashes, e.g. on VMs that advertise AMX but fault on it) give up weight repacking.
This measures what that costs, on this machine: for each setting a dedicated server
(``sigform.local.serve(safe_cpu=...)``) gets

* prompt processing: ``PROMPT_ROUNDS`` requests of a ~350-token prompt with ``max_tokens=1``,
  each with a different first line so llama.cpp cannot reuse its cached prefix
  (prompt tokens / wall time, median);
* generation: ``GEN_ROUNDS`` requests of a short prompt with ``max_tokens=GEN_TOKENS``
  (completion tokens / (wall time - the prompt's share at the measured prompt speed), median).

A setting whose server dies is reported with the signal instead of a figure.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.error
import urllib.request
from typing import Any

PROMPT_ROUNDS = 3
GEN_ROUNDS = 3
GEN_TOKENS = 64
_FILLER = (
    "Paid $42.50 to Anna Berg for a team lunch on 2024-05-14. Office Depot charged $89.99 for printer "
    "paper on 2024-07-22. On 2024-02-03 we sent $1,200.00 to Northwind Airlines for a flight to Lisbon. "
)
LONG_PROMPT = "Summarise these expense notes in one line.\n" + _FILLER * 6
SHORT_PROMPT = "Write a long list of office supplies, one per line, with a price for each."


def _post(api_base: str, model: str, prompt: str, max_tokens: int) -> tuple[dict[str, Any], float]:
    body = json.dumps({
        "model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
        "temperature": 0.0,
    }).encode()
    request = urllib.request.Request(
        f"{api_base}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        data = json.loads(response.read())
    return data["usage"], time.perf_counter() - started


def measure(api_base: str, model: str) -> dict[str, float]:
    """Prompt and generation tokens/s of the server at ``api_base`` (medians)."""
    _post(api_base, model, "Hello", 1)  # warm-up: first-request allocations
    prompt_rates = []
    for i in range(PROMPT_ROUNDS):
        usage, seconds = _post(api_base, model, f"Note set {i}.\n{LONG_PROMPT}", 1)
        prompt_rates.append(usage["prompt_tokens"] / seconds)
    prompt_rate = statistics.median(prompt_rates)
    gen_rates = []
    for i in range(GEN_ROUNDS):
        usage, seconds = _post(api_base, model, f"{i}. {SHORT_PROMPT}", GEN_TOKENS)
        generating = max(seconds - usage["prompt_tokens"] / prompt_rate, 1e-6)
        gen_rates.append(usage["completion_tokens"] / generating)
    return {"prompt_tokens_per_s": prompt_rate, "generated_tokens_per_s": statistics.median(gen_rates)}


def run_setting(safe_cpu: bool) -> dict[str, Any]:
    """Serve with one setting and measure it; ``{"error": ...}`` when the server dies."""
    import sigform.local
    from sigform.local._process import describe_exit

    with sigform.local.serve(safe_cpu=safe_cpu) as server:
        try:
            return measure(server.api_base, sigform.local.MODEL_NAME)
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            code = server.wait_exit(timeout=5.0)
            if code is not None:
                return {"error": f"server died: {describe_exit(code)}"}
            return {"error": f"{type(exc).__name__}: {exc}"}


def run() -> dict[str, dict[str, Any]]:
    """Both settings: ``{"default": {...}, "safe": {...}}``."""
    return {"default": run_setting(False), "safe": run_setting(True)}
