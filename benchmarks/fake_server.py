"""The loopback OpenAI-compatible server both sides of the comparison call, in its own process.

It is ``sigform.testing.providers.OpenAIChatFake`` answering every chat-completions request with
one fixed text after ``latency`` seconds. It runs in a separate process so that the server's
work never shares a GIL (or a memory figure) with the client being measured, whichever
framework that client is. Recording is bounded (the last 64 requests) so that 10,000-call runs
do not grow the server, and ``GET /__bench/requests`` returns what was recorded (for checking
that both sides send the same kind of request).

    with FakeServer(text="[[ ## answer ## ]]\\nParis", latency=0.05) as server:
        server.api_base          # http://127.0.0.1:<port>/v1
        server.requests()        # the last recorded request bodies (JSON)
        server.arrivals()        # when every model request arrived (for rate measurements)

Run directly: ``python -m benchmarks.fake_server --text ... --latency 0.05`` prints the port and
serves until its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDED = 64
ARRIVALS = 1_000_000  # arrival times kept (8 MB at most): rate measurements read them


def _make_server(text: str, latency: float, prompt_tokens: int, completion_tokens: int) -> Any:
    from sigform.testing.providers import OpenAIChatFake, Reply, Response, Usage

    reply = Reply(text, usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens))

    class BenchServer(OpenAIChatFake):
        async def handle(self, request: Any) -> Any:
            if request.path == "/__bench/requests":
                return Response.json([r.json for r in list(self.requests) if r.path != request.path])
            if request.path == "/__bench/arrivals":
                return Response.json(list(self.arrivals))
            self.arrivals.append(time.time())
            return await super().handle(request)

    server = BenchServer(default=reply, latency=latency)
    server.arrivals = deque(maxlen=ARRIVALS)  # type: ignore[attr-defined]
    server.requests = deque(maxlen=RECORDED)  # type: ignore[assignment]  # bounded: long runs stay flat
    return server


class FakeServer:
    """Start the fake in a child process (context manager); ``api_base`` points at it."""

    def __init__(
        self, text: str, latency: float = 0.0, prompt_tokens: int = 50, completion_tokens: int = 10
    ) -> None:
        self.text = text
        self.latency = latency
        self.usage = (prompt_tokens, completion_tokens)
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> FakeServer:
        cmd = [
            sys.executable, "-m", "benchmarks.fake_server", "--text", self.text,
            "--latency", str(self.latency), "--prompt-tokens", str(self.usage[0]),
            "--completion-tokens", str(self.usage[1]),
        ]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"fake server did not start (printed {line!r})")
        self.port = int(line)
        return self

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        """The last recorded request bodies (at most 64), oldest first."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__bench/requests", timeout=10) as resp:
            return json.loads(resp.read())

    def arrivals(self) -> list[float]:
        """When each model request arrived (the server's wall clock, seconds), oldest first."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__bench/arrivals", timeout=30) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the child exits when its stdin closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="loopback OpenAI-compatible fake for the benchmarks")
    parser.add_argument("--text", required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--prompt-tokens", type=int, default=50)
    parser.add_argument("--completion-tokens", type=int, default=10)
    args = parser.parse_args()
    server = _make_server(args.text, args.latency, args.prompt_tokens, args.completion_tokens)
    with server:
        print(server.port, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or dies)


if __name__ == "__main__":
    main()
