"""What the command tool's supervisor costs per command (standalone; not part of the DSPy suite).

On Linux every ``CommandTool`` command runs under ``sigform/tools/_reaper.py`` (a child subreaper
that ends everything the command started). This times ``run_command(["true"])`` supervised and
unsupervised, rounds alternating so that drifting load hits both alike, and prints medians and the
added milliseconds per command::

    python -m benchmarks.command_supervisor [ROUNDS]
"""

from __future__ import annotations

import asyncio
import sys
import time

from benchmarks.common import median
from sigform.tools import process

_PER_ROUND = 10


async def _per_command(supervised: bool) -> float:
    process._SUPERVISED = supervised
    start = time.perf_counter()
    for _ in range(_PER_ROUND):
        out = await process.run_command(["true"], timeout=30, max_output=1000)
        assert out.ok, out.render()
    return (time.perf_counter() - start) / _PER_ROUND


def main(rounds: int = 15) -> None:
    if not process._SUPERVISED:
        print("no supervisor on this platform: commands run as before")
        return
    supervised: list[float] = []
    plain: list[float] = []
    try:
        for _ in range(rounds):
            supervised.append(asyncio.run(_per_command(True)))
            plain.append(asyncio.run(_per_command(False)))
    finally:
        process._SUPERVISED = True
    sup, bare = median(supervised) * 1000, median(plain) * 1000
    print(f"run_command(['true']), median of {rounds} rounds x {_PER_ROUND} commands:")
    print(f"  supervised  {sup:7.1f} ms per command")
    print(f"  plain       {bare:7.1f} ms per command")
    print(f"  added       {sup - bare:7.1f} ms per command (x{sup / bare:.1f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
