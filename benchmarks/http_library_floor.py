"""The HTTP library's own floor in the throughput measurement: aiohttp with no framework on top.

sigform's async fast path sends through the openai SDK's aiohttp session, so aiohttp's cost per
request is part of every figure of ``abatch``. This loop is the least any client on aiohttp can
do for the same workload: ``concurrency`` worker coroutines share one ``aiohttp.ClientSession``,
POST the very request body sigform sends (with a bearer token and a JSON content type), read the
body and decode its JSON, until ``n`` requests are done. Its wall time, set against the raw
socket floor of ``benchmarks.socket_floor``, says how much of the floor any aiohttp client can
reach at all; sigform's wall time set against it says what sigform costs on top of its HTTP
library.
"""

from __future__ import annotations

import asyncio
import json
import time

__all__ = ["aiohttp_times"]


async def _aiohttp_alone(api_base: str, body: bytes, n: int, concurrency: int) -> float:
    import aiohttp

    url = f"{api_base}/chat/completions"
    headers = {"Authorization": "Bearer k", "Content-Type": "application/json"}
    todo = iter(range(n))
    async with aiohttp.ClientSession() as session:

        async def worker() -> None:
            for _ in todo:
                async with session.post(url, data=body, headers=headers) as response:
                    reply = json.loads(await response.read())
                    assert reply["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start


def aiohttp_times(api_base: str, body: bytes, n: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds and process CPU seconds of ``n`` requests through one aiohttp session."""
    cpu = time.process_time()
    wall = asyncio.run(_aiohttp_alone(api_base, body, n, concurrency))
    return wall, time.process_time() - cpu
