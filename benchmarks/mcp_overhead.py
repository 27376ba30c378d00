"""What sigform adds over the MCP SDK's own round trip: listing tools and one tool call.

One server process (written with the SDK's server API, 11 tools) is spoken to twice: by a bare SDK
``ClientSession`` over ``stdio_client`` on this loop, and by ``sf.MCPClient`` (whose connection
lives on sigform's background loop, so each call also crosses threads). Rounds alternate so that
drifting load hits both alike; the figures are medians per operation, and the added time is
sigform's minus the bare SDK's. Target: under 5 ms added for listing and for one call::

    python -m benchmarks.mcp_overhead [ROUNDS]
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

from benchmarks.common import Row, Section, median

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")

@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def make(i):
    def echo(text: str, times: int = 1) -> str:
        return text * times
    server.tool(name=f"echo_{i}", description=f"Echo number {i}.")(echo)

for i in range(10):
    make(i)

server.run("stdio")
'''
TARGET_MS = 5.0


async def _per_op(make: Callable[[], Awaitable[object]], n: int) -> tuple[float, float]:
    """(wall, process CPU) seconds per operation: on a loaded machine the wall time of a hop
    between threads is mostly waiting for a core; CPU time is what the work costs."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        await make()
    return (time.perf_counter() - start) / n, (time.process_time() - cpu) / n


async def _measure(rounds: int, per_round: int) -> dict[str, list[tuple[float, float]]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    import sigform as sf

    names = ("sdk list", "sf list", "sdk call", "sf call", "sf sync call")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER])
    client = sf.MCPClient.stdio(sys.executable, ["-c", SERVER], name="bench")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session, client:
        await session.initialize()
        add = {t.name: t for t in await client.atools()}["add"]
        assert (await add.arun({"a": 1, "b": 2})).value == {"result": 3}

        async def sf_list() -> object:
            client._tools = None  # list afresh, as the first use does
            return await client.atools()

        async def sf_sync_call() -> object:
            return add.run({"a": 1, "b": 2})  # blocks this loop: the work is on sigform's loop

        for _ in range(rounds):
            times["sdk list"].append(await _per_op(session.list_tools, per_round))
            times["sf list"].append(await _per_op(sf_list, per_round))
            sdk_call = lambda: session.call_tool("add", {"a": 1, "b": 2})  # noqa: E731
            times["sdk call"].append(await _per_op(sdk_call, per_round))
            times["sf call"].append(await _per_op(lambda: add.arun({"a": 1, "b": 2}), per_round))
            times["sf sync call"].append(await _per_op(sf_sync_call, per_round))
    return times


def run(rounds: int = 7, per_round: int = 20) -> Section:
    times = asyncio.run(_measure(rounds, per_round))
    ms = {k: median([wall for wall, _ in v]) * 1000 for k, v in times.items()}
    cpu = {k: median([c for _, c in v]) * 1000 for k, v in times.items()}
    rows = []
    for what, sdk, mine in (
        ("list 11 tools", "sdk list", "sf list"),
        ("one tool call (async)", "sdk call", "sf call"),
        ("one tool call (sync)", "sdk call", "sf sync call"),
    ):
        added = ms[mine] - ms[sdk]
        rows.append(
            Row(
                "mcp",
                f"MCP {what}: added over the bare SDK",
                "ms",
                round(added, 3),
                ratio=round(ms[mine] / ms[sdk], 3),
                ratio_desc="sigform / bare SDK",
                target=f"< {TARGET_MS:g} ms added",
                met=added < TARGET_MS,
                note=f"sigform {ms[mine]:.2f} vs SDK {ms[sdk]:.2f} ms; CPU {cpu[mine]:.2f} vs {cpu[sdk]:.2f}",
            )
        )
    details = {
        "median ms": {k: round(v, 3) for k, v in ms.items()},
        "median CPU ms": {k: round(v, 3) for k, v in cpu.items()},
        "rounds": rounds,
    }
    return Section("mcp", rows, details=details)


def main(rounds: int = 7) -> None:
    section = run(rounds)
    print(f"MCP overhead, median of {rounds} rounds (per operation):")
    for row in section.rows:
        verdict = "met" if row.met else "NOT MET"
        print(f"  {row.metric:50s} {row.sigform:7.2f} ms  x{row.ratio:.2f}  ({row.note})  {verdict}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
