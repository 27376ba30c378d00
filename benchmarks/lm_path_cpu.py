"""CPU cost of sigform's own LM call path, without any network.

A fixed-answer :class:`~sigform.lm.backend.Backend` sits under a real ``sigform.LM``
(``LM(model, backend=...)``), so every figure is what the LM itself does per call: checking and
building the request, hooks, cache, parsing the answer, usage, history. Measured in CPU time
(``time.process_time``), which a loaded machine disturbs far less than wall time; medians over
rounds. Prints microseconds per call for a plain call (cache off), a memory-cache hit and a
``Predict`` call over the same LM (ChatAdapter), and the Predict/plain ratio.

Usage: ``python -m benchmarks.lm_path_cpu [--calls 2000] [--rounds 7]``. To compare two
checkouts, run it from each in turn, several times, alternating, and compare the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

ANSWER = "[[ ## answer ## ]]\nok\n\n[[ ## completed ## ]]"
BODY = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


class FixedAnswer:
    """A backend that answers every request with :data:`BODY` at once."""

    name = "fixed"

    def complete(self, req: Any) -> tuple[dict[str, Any], float | None]:
        return BODY, None

    async def acomplete(self, req: Any) -> tuple[dict[str, Any], float | None]:
        return BODY, None

    def stream(self, req: Any) -> Any:
        raise NotImplementedError("not measured")

    def astream(self, req: Any) -> Any:
        raise NotImplementedError("not measured")


def per_call(fn: Callable[[], Any], calls: int, rounds: int) -> float:
    """Median CPU microseconds per ``fn()`` over ``rounds`` rounds of ``calls`` calls."""
    for _ in range(max(1, calls // 10)):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            fn()
        samples.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    import sigform as sf

    messages = [{"role": "user", "content": "hi"}]
    plain = sf.LM("openai/gpt-4o-mini", backend=FixedAnswer(), cache=False)
    cached = sf.LM("openai/gpt-4o-mini", backend=FixedAnswer(), cache=True)
    program = sf.Predict("question -> answer")
    with sf.context(cache_disk=False):
        cached(messages)
        hit = per_call(lambda: cached(messages), args.calls, args.rounds)
    call = per_call(lambda: plain(messages, temperature=0.0), args.calls, args.rounds)
    with sf.context(lm=plain, adapter=sf.ChatAdapter()):
        predict = per_call(lambda: program(question="q"), max(1, args.calls // 4), args.rounds)
    print(f"LM call path, CPU per call (median of {args.rounds} rounds)")
    print(f"  lm(messages), cache off        {call:8.1f} us")
    print(f"  lm(messages), memory cache hit {hit:8.1f} us")
    print(f"  Predict over the same LM        {predict:8.1f} us   {predict / call:.2f}x a plain call")


if __name__ == "__main__":
    main()
