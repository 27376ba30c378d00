"""Per-call overhead of sigform.LM versus a bare httpx request, on a loopback server.

Starts a minimal OpenAI-compatible HTTP server (asyncio, separate process, fixed answer) and
prints, as medians over repeats:

* sequential per-call time: bare httpx, sigform fast path (openai SDK), sigform via litellm,
  each with the ratio to the httpx floor (cache off; plus fast path with the cache on and
  every request new, so that each call also writes the disk cache);
* concurrent throughput: 64 concurrent async calls with 50 ms server latency (bare aiohttp,
  the transport the fast path uses, as the floor of this machine);
* 500 async calls, at most 64 at a time, at 50 ms latency versus the ideal
  (``ceil(500 / 64)`` latencies), and 500 at once versus one latency;
* a fresh process's time from ``import sigform`` to its first completed fast-path call.

Usage: ``python benchmarks/lm_overhead.py [--calls 300] [--repeats 5] [--skip-litellm]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}).encode()


def _serve(port_queue: Any, latency: float) -> None:
    """A keep-alive HTTP/1.1 server answering every POST with BODY after ``latency`` seconds."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                if latency:
                    await asyncio.sleep(latency)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(BODY)}\r\n\r\n".encode() + BODY
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class Server:
    def __init__(self, latency: float = 0.0) -> None:
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        self.proc = ctx.Process(target=_serve, args=(queue, latency), daemon=True)
        self.proc.start()
        self.api_base = f"http://127.0.0.1:{queue.get(timeout=30)}/v1"

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.join()


def interleaved(contenders: dict[str, Any], calls: int, repeats: int) -> dict[str, float]:
    """Median seconds per call of each contender; rounds alternate between contenders so that
    load from other processes hits all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():
        fn(0)  # warm up: connections, lazy imports
    for r in range(repeats):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for i in range(calls):
                fn(r * calls + i + 1)
            times[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def sequential(calls: int, repeats: int, skip_litellm: bool) -> None:
    import httpx

    import sigform as sf

    with Server() as server:
        url = server.api_base + "/chat/completions"
        client = httpx.Client()
        messages = [{"role": "user", "content": "hi"}]

        def bare(i: int) -> None:
            r = client.post(url, json={"model": "bench", "messages": messages},
                            headers={"authorization": "Bearer k"})
            r.raise_for_status()
            assert r.json()["choices"][0]["message"]["content"] == "ok"

        def lm_call(unique: bool, **kw: Any) -> Any:
            lm = sf.LM("openai/bench", api_base=server.api_base, api_key="k", **kw)

            def call(i: int) -> None:
                content = f"hi {i} {time.perf_counter_ns()}" if unique else "hi"
                assert lm([{"role": "user", "content": content}])[0].text == "ok"

            return call

        contenders = {
            "bare httpx request": bare,
            "sigform fast path, cache off": lm_call(False, fast_path=True, cache=False),
            "sigform fast path, cache miss": lm_call(True, fast_path=True, cache=True),
            "sigform fast path, cache hit": lm_call(False, fast_path=True, cache=True),
        }
        if not skip_litellm:
            contenders["sigform via litellm, cache off"] = lm_call(False, fast_path=False, cache=False)
        result = interleaved(contenders, calls, repeats)
        floor = result["bare httpx request"]
        print(f"sequential calls, 0 ms server latency (median of {repeats} rounds of {calls} calls)")
        for name, t in result.items():
            print(f"  {name:32s} {t * 1e3:7.3f} ms/call  {t / floor:5.2f}x")


async def _throughput(make_call: Any, total: int, concurrency: int) -> float:
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await make_call(i)

    await asyncio.gather(*(one(i) for i in range(concurrency)))  # warm up: open the connections
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(total)))
    return total / (time.perf_counter() - start)


def concurrent(skip_litellm: bool, repeats: int) -> None:
    import httpx

    import sigform as sf

    latency = 0.05
    with Server(latency) as server:
        url = server.api_base + "/chat/completions"
        body = {"model": "bench", "messages": [{"role": "user", "content": "x"}]}

        async def bare(total: int, conc: int) -> float:
            async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1000)) as client:
                async def call(i: int) -> None:
                    (await client.post(url, json=body)).json()

                return await _throughput(call, total, conc)

        async def bare_aiohttp(total: int, conc: int) -> float:
            import aiohttp

            payload = json.dumps(body)
            headers = {"content-type": "application/json", "authorization": "Bearer k"}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)) as session:
                async def call(i: int) -> None:
                    async with session.post(url, data=payload, headers=headers) as response:
                        json.loads(await response.read())

                return await _throughput(call, total, conc)

        def via_lm(fast: bool) -> Any:
            async def run(total: int, conc: int) -> float:
                lm = sf.LM("openai/bench", api_base=server.api_base, api_key="k", fast_path=fast, cache=False)

                async def call(i: int) -> None:
                    await lm.acall([{"role": "user", "content": f"x{i}"}])

                return await _throughput(call, total, conc)

            return run

        contenders = {
            "bare httpx AsyncClient": bare,
            "bare aiohttp": bare_aiohttp,
            "sigform fast path": via_lm(True),
        }
        if not skip_litellm:
            contenders["sigform via litellm"] = via_lm(False)
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(repeats):
            for name, run in contenders.items():
                rates[name].append(asyncio.run(run(640, 64)))
        ideal = 64 / latency
        print(f"\n64 concurrent async calls, {latency * 1e3:.0f} ms latency (ideal {ideal:.0f} calls/s)")
        for name, r in rates.items():
            print(f"  {name:32s} {statistics.median(r):7.0f} calls/s")

        total, limit = 500, 64
        waves = -(-total // limit) * latency
        bounded = {"bare aiohttp": bare_aiohttp, "sigform fast path": via_lm(True)}
        seconds: dict[str, list[float]] = {name: [] for name in bounded}
        for _ in range(max(5, repeats)):  # a short run: more rounds than the rate above
            for name, run in bounded.items():
                seconds[name].append(total / asyncio.run(run(total, limit)))
        print(f"\n{total} acalls, at most {limit} at a time, {latency * 1e3:.0f} ms latency "
              f"(ideal {waves * 1e3:.0f} ms)")
        for name, t in seconds.items():
            med = statistics.median(t)
            print(f"  {name:32s} {med * 1e3:7.0f} ms  {med / waves:5.2f}x ideal")

        async def burst(n: int) -> float:
            lm = sf.LM("openai/bench", api_base=server.api_base, api_key="k", fast_path=True, cache=False)
            await asyncio.gather(*(lm.acall("warm") for _ in range(n)))  # open the connections
            start = time.perf_counter()
            await asyncio.gather(*(lm.acall(f"b{i}") for i in range(n)))
            return time.perf_counter() - start

        t = statistics.median(asyncio.run(burst(500)) for _ in range(repeats))
        print(f"\n500 concurrent acalls, fast path: {t * 1e3:.0f} ms for the batch "
              f"(one latency = {latency * 1e3:.0f} ms; {t / latency:.2f}x)")


def first_call() -> None:
    with Server() as server:
        code = (
            "import time; t0 = time.perf_counter(); import sigform as sf; t1 = time.perf_counter()\n"
            f"lm = sf.LM('openai/bench', api_base={server.api_base!r}, cache=False)\n"
            "lm('hi'); t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
        )
        runs = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise SystemExit(f"first-call subprocess failed:\n{out.stderr[-3000:]}")
            runs.append([float(x) for x in out.stdout.split()])
        imp = statistics.median(r[0] for r in runs)
        call = statistics.median(r[1] for r in runs)
        print(f"\nfresh process: import sigform {imp * 1e3:.0f} ms, "
              f"then first fast-path call {call * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-litellm", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("SIGFORM_CACHE_DIR", tempfile.mkdtemp(prefix="sigform-bench-"))
    sequential(args.calls, args.repeats, args.skip_litellm)
    concurrent(args.skip_litellm, max(1, args.repeats // 2))
    first_call()


if __name__ == "__main__":
    main()
