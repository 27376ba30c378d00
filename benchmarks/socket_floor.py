"""The raw asyncio socket floor of the throughput measurement: no framework, no HTTP library.

``concurrency`` workers, each on its own keep-alive connection (``asyncio.open_connection``),
send the very request body sigform sends (as the fake recorded it) as a hand-written HTTP/1.1
POST and read the response (status line, headers, ``Content-Length`` bytes of JSON, decoded
and checked), until ``n`` requests are done. Whatever a client library adds on top of this is
its overhead; the wall time of this loop is the floor the frameworks are compared with.
"""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlsplit

__all__ = ["floor_seconds", "floor_times"]


def _request(api_base: str, body: bytes) -> tuple[str, int, bytes]:
    url = urlsplit(api_base)
    head = (
        f"POST {url.path}/chat/completions HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\n"
        "Authorization: Bearer k\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return url.hostname or "127.0.0.1", url.port or 80, head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> dict[str, object]:
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"socket floor: unexpected status {status!r}")
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(await reader.readexactly(length))


async def _floor(api_base: str, body: bytes, n: int, concurrency: int) -> float:
    host, port, request = _request(api_base, body)
    remaining = [n]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while remaining[0] > 0:
                remaining[0] -= 1
                writer.write(request)
                reply = await _read_response(reader)
                assert reply["choices"][0]["message"]["content"]  # type: ignore[index]
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


def floor_seconds(api_base: str, body: bytes, n: int, concurrency: int) -> float:
    """Wall seconds of ``n`` requests over ``concurrency`` raw keep-alive connections."""
    return asyncio.run(_floor(api_base, body, n, concurrency))


def floor_times(api_base: str, body: bytes, n: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds and process CPU seconds of :func:`floor_seconds`."""
    cpu = time.process_time()
    wall = floor_seconds(api_base, body, n, concurrency)
    return wall, time.process_time() - cpu
