"""An MCP server run as a subprocess and spoken to over its stdin and stdout.

The SDK's ``stdio_client`` hides the process, and sigform needs it: a server that dies mid-call is
reported with its exit code and the end of its stderr, a server is ended by a signal when its owner
is garbage-collected or the interpreter exits (no event loop needed), and a forked child must let
go of the parent's server. So the process is started here, under the command tools' supervisor
(:mod:`sigform.tools.process`: on Linux every process the server starts ends with it), and its
pipes are bridged to the message streams the SDK's ``ClientSession`` reads and writes, one JSON-RPC
message per line, as the MCP stdio transport specifies.

Shutdown follows the MCP lifecycle: close the server's stdin, give it a moment to exit, then end it
and everything it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from sigform import runtime
from sigform.tools.process import end_process, end_process_now, spawn

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["StdioServer"]

_EXIT_GRACE = 2.0  # seconds (as the SDK gives) a server gets to exit by itself once its stdin is closed
_EXIT_CODE_WAIT = 2.0  # after its stdout closed, how long to wait for the exit code
_STDERR_TAIL = 4096  # bytes of the server's stderr kept for error messages
_MAX_LINE = 64 * 1024 * 1024  # one JSON-RPC message; a longer line is refused, not buffered forever


class StdioServer:
    """One server process (see the module docstring). ``open()`` yields the SDK's streams."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.owner = os.getpid()
        self.proc: asyncio.subprocess.Process | None = None
        self.stdin_fd: int | None = None
        self._stderr = bytearray()

    @property
    def pid(self) -> int | None:
        """The process id of the server (of its supervisor on Linux, whose child the server is)."""
        return self.proc.pid if self.proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The exit code once the server has exited (negative: killed by that signal)."""
        return self.proc.returncode if self.proc is not None else None

    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", "replace").strip()

    def end_now(self) -> None:
        """End the server without waiting (finalizers, interpreter exit); never a forked child's
        parent's server."""
        if self.proc is not None and os.getpid() == self.owner:
            end_process_now(self.proc)

    @asynccontextmanager
    async def open(
        self,
    ) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
    ]:
        import anyio
        from mcp.shared.message import SessionMessage

        proc = self.proc = await spawn(self.argv, self.cwd, self.env, stdin=subprocess.PIPE)
        pipe = proc.stdin.transport.get_extra_info("pipe") if proc.stdin is not None else None
        self.stdin_fd = pipe.fileno() if pipe is not None else None
        _started.add(self)
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._read_stdout, read_send)
                tasks.start_soon(self._write_stdin, write_recv, read_send)
                tasks.start_soon(self._read_stderr)
                try:
                    yield read_recv, write_send
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop()
                    tasks.cancel_scope.cancel()
        finally:
            for stream in (read_send, read_recv, write_send, write_recv):
                stream.close()
            if proc.returncode is None:  # a cancellation got in before the shielded stop
                end_process_now(proc)

    async def _read_stdout(self, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        import anyio
        import mcp_types
        from mcp.shared.message import SessionMessage

        stdout = self.proc.stdout  # type: ignore[union-attr]
        assert stdout is not None
        buffer = bytearray()
        try:
            async with send:
                while chunk := await stdout.read(65536):
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if not line.strip():
                            continue
                        message: SessionMessage | Exception
                        try:
                            message = SessionMessage(
                                mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except ValueError as exc:  # the session reports it; the line is dropped
                            message = _unreadable_answer(line, exc) or exc
                        await send.send(message)
                    if len(buffer) > _MAX_LINE:
                        await send.send(ValueError(f"a message longer than {_MAX_LINE} bytes was refused"))
                        buffer.clear()
                # stdout closed: the server is exiting; its exit code makes the error message
                await self._wait_exit(_EXIT_CODE_WAIT)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the session went away (closed streams) or the pipe broke: nothing is left to tell

    async def _write_stdin(
        self,
        receive: MemoryObjectReceiveStream[SessionMessage],
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        stdin = self.proc.stdin  # type: ignore[union-attr]
        assert stdin is not None
        try:
            async with receive:
                async for item in receive:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode("utf-8") + b"\n")
                    await stdin.drain()
        except (OSError, RuntimeError):  # the server closed its stdin (or died)
            await self._wait_exit(_EXIT_CODE_WAIT)
            read_send.close()  # the session sees the end rather than waiting for an answer
        except Exception:
            read_send.close()

    async def _read_stderr(self) -> None:
        stderr = self.proc.stderr  # type: ignore[union-attr]
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self._stderr += chunk
            if len(self._stderr) > _STDERR_TAIL:
                del self._stderr[: len(self._stderr) - _STDERR_TAIL]

    async def _wait_exit(self, timeout: float) -> bool:
        # polled: Process.wait() also waits for the pipes, which a leftover grandchild may hold
        proc = self.proc
        assert proc is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while proc.returncode is None:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def _stop(self) -> None:
        proc = self.proc
        assert proc is not None
        _started.discard(self)
        self.stdin_fd = None  # closed below: a later fork must not touch whatever reuses the number
        if proc.stdin is not None:
            proc.stdin.close()
        if not await self._wait_exit(_EXIT_GRACE):
            await end_process(proc)


# an answer's id, read from the start of a line too deep for any JSON parser to read whole (the SDK
# writes jsonrpc, id, then result or error)
_ANSWER_ID = re.compile(
    rb'\A\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,18})\s*,\s*"(?:result|error)"'
)


def _unreadable_answer(line: bytes, exc: ValueError) -> SessionMessage | None:
    """An answer to a request that cannot be read (a result nested 300 deep, a field of the
    wrong type) as an error answer to that request, so the caller fails at once with the reason
    instead of at its timeout; None when the line names no request it answers."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        data = json.loads(line)
    except RecursionError:  # deeper than Python's parser goes: the id from the line's start
        found = _ANSWER_ID.match(line)
        data = {"id": int(found.group(1)), "result": None} if found else None
    except ValueError:
        return None
    ident = data.get("id") if isinstance(data, dict) and ("result" in data or "error" in data) else None
    if isinstance(ident, bool) or not isinstance(ident, (int, str)):
        return None
    reason = str(exc).splitlines()
    text = f"{type(exc).__name__}: {' '.join(reason[-2:]).strip()}"[:300]
    return SessionMessage(
        mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=ident,
            error=mcp_types.ErrorData(
                code=mcp_types.PARSE_ERROR, message=f"its answer could not be read ({text})"
            ),
        )
    )


# -- process-wide: kept in one place ------------------------------------------------------------
# A forked child holds a copy of the pipe to each parent's server's stdin: the server would not see
# its stdin close when the parent closes it. The child points its copy at /dev/null (keeping the fd
# numbers taken, so nothing else reuses them under the stale pipe objects) and never signals or
# talks to those servers (each server remembers the pid that started it).
_started: weakref.WeakSet[StdioServer] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    servers = list(_started)
    _started.clear()
    if not servers:
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for server in servers:
            if server.stdin_fd is not None:
                try:
                    os.dup2(devnull, server.stdin_fd)
                except OSError:
                    pass
    finally:
        os.close(devnull)


runtime.on_fork(_after_fork_in_child)
