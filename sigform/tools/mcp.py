"""Tools from Model Context Protocol servers, as ordinary sigform tools.

::

    with sf.MCPClient.stdio("python", ["notes_server.py"], name="notes",
                            requires_approval={"delete_note"}) as notes:
        agent = sf.Agent("task -> summary", tools=notes.tools(), approver=TerminalApprover())
        agent(task="tidy my notes")

An :class:`MCPClient` is one server: a command run as a subprocess and spoken to over stdio
(:meth:`MCPClient.stdio`), or a streamable-HTTP endpoint (:meth:`MCPClient.http`). Its
:meth:`~MCPClient.tools` are :class:`MCPTool` objects -- :class:`~sigform.tools.Tool` subclasses
whose name, description and argument schema come from the server -- so approvals, hooks, events,
the agent loop (native tool calls or the JSON text fallback), sync and async all work as for any
tool. The approval text names the server and shows the exact arguments, escaped.

What the server sends is data, never instructions to sigform: control characters in names and
descriptions are escaped, descriptions are capped, a tool name the function-calling APIs cannot
take is refused, and a server's description cannot lift the approval its tools require. A tool
result maps to sigform's values: text parts to text, images to :class:`sigform.Image` (sent to the
model as image parts), structured content to the value; an ``isError`` result is an error result
the model reads.

Lifetimes: the connection lives on sigform's background event loop whatever loop or thread calls
it. A server process started here ends when the ``with`` block ends (or :meth:`~MCPClient.close`),
when the client is garbage-collected, at interpreter exit, and never in a forked child (the child
lets go of the parent's servers and gets a clear error if it uses one). A server that dies or hangs
mid-call gives the call an error naming the server, its exit code and the end of its stderr; the
agent goes on, and the server's other tools answer with the same error.

The SDK (``pip install "sigform[mcp]"``) is imported only when a server is started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict

from sigform import runtime
from sigform.errors import FieldError, MCPServerError, ToolArgumentsError, ToolError
from sigform.excerpt import shorten
from sigform.tools._invoke import run_sync
from sigform.tools.display import escape_controls
from sigform.tools.result import ToolResult
from sigform.tools.tool import ApprovalRule, Hook, Tool

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp_types import Tool as ToolSpec

    from sigform.tools._mcp_stdio import StdioServer

__all__ = ["MCPClient", "MCPServerError", "MCPTool"]

logger = logging.getLogger("sigform.tools")

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_DESCRIPTION = 4000  # characters of a server's tool description the model reads
_STOP_WAIT = 10.0  # seconds close() waits for the connection to wind down
_T = TypeVar("_T")


class _AnyArguments(BaseModel):
    """The arguments model of an MCP tool: the server's JSON schema does the checking."""

    model_config = ConfigDict(extra="allow")


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ToolError(
            'MCP servers need the MCP SDK: pip install "sigform[mcp]" (or pip install mcp)'
        ) from None


class _Connection:
    """The live part of a client: the transport and SDK session, run as one task on sigform's
    background loop. Holds no reference to the :class:`MCPClient`, so a finalizer can end it."""

    def __init__(
        self, label: str, stdio: StdioServer | None, http: tuple[str, Mapping[str, object]] | None
    ) -> None:
        self.label = label
        self.stdio = stdio  # None for HTTP
        self.http = http
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready: concurrent.futures.Future[None] | None = None
        self.stopping: asyncio.Event | None = None
        self.task: asyncio.Task[object] | None = None
        self.done: concurrent.futures.Future[None] | None = None
        self.session: ClientSession | None = None
        self.closed = False
        self.malformed: str | None = None  # the last message from the server that could not be read

    # -- on the background loop ------------------------------------------------------------------
    async def _serve(self) -> None:
        from mcp import ClientSession

        assert self.ready is not None
        self.stopping = asyncio.Event()
        self.task = asyncio.current_task()
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.stdio is not None:
                    read, write = await stack.enter_async_context(self.stdio.open())
                else:
                    read, write = await stack.enter_async_context(_http_streams(*self.http))  # type: ignore[misc]
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._on_message)
                )
                await session.initialize()
                self.session = session
                if not self.ready.done():
                    self.ready.set_result(None)
                await self.stopping.wait()
        except BaseException as exc:  # kept for the callers; only a cancellation goes on
            if not self.ready.done():
                self.ready.set_exception(
                    exc if isinstance(exc, Exception) else MCPServerError(f"{self.label} was stopped")
                )
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None
            self.closed = True

    async def _on_message(self, message: object) -> None:
        if isinstance(message, Exception):  # a line that is not JSON-RPC, a transport fault
            self.malformed = escape_controls(shorten(_exception_text(message), 300))
            logger.warning("%s sent a malformed message: %s", self.label, self.malformed)

    # -- from anywhere ---------------------------------------------------------------------------
    def _check_owner(self) -> None:
        if os.getpid() != self.owner:
            raise MCPServerError(
                f"{self.label} was started by process {self.owner}; this forked child (process "
                f"{os.getpid()}) cannot use it: open a new MCPClient in the child"
            )

    async def on_loop(self, make: Callable[[], Coroutine[object, object, _T]]) -> _T:
        """Run the coroutine ``make()`` on the connection's loop and await it from this one
        (cancelling the caller cancels it)."""
        self._check_owner()
        loop = runtime.loop() if self.loop is None else self.loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return await make()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), loop))

    async def start(self, timeout: float) -> None:
        self._check_owner()
        if self.closed:
            raise MCPServerError(f"{self.label} was closed; open a new MCPClient")
        with self.lock:  # callers on several threads start it once
            if self.ready is None:
                self.loop = runtime.loop()
                self.ready = concurrent.futures.Future()
                self.done = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)
        if not await _settled(self.ready, timeout):
            await self.stop()
            raise MCPServerError(f"{self.label} did not finish starting within {timeout:g}s")
        problem = self.ready.exception()
        if isinstance(problem, MCPServerError):
            raise problem
        if problem is not None:
            await self.stop()
            raise MCPServerError(f"{self.label} could not be started: {self.explain(problem)}")

    async def stop(self) -> None:
        """End the session and the server (bounded); safe to call more than once."""
        self.closed = True
        if self.done is None or os.getpid() != self.owner:
            return
        loop = self.loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is gone (interpreter exit)
            loop.call_soon_threadsafe(self._release)
        if not await _settled(self.done, _STOP_WAIT) and self.stdio is not None:
            self.stdio.end_now()

    def _release(self) -> None:
        if self.ready is not None and not self.ready.done() and self.task is not None:
            self.task.cancel()  # still starting: stop waiting for it
        elif self.stopping is not None:
            self.stopping.set()
        elif self.done is not None:  # not running on the loop yet
            self.done.cancel()

    def abandon(self) -> None:
        """Finalizer: end the server now, without a loop (garbage collection, interpreter exit)."""
        if os.getpid() != self.owner:
            return  # a forked child never touches its parent's server
        self.closed = True
        if self.stdio is not None:
            self.stdio.end_now()
        if self.loop is not None and self.done is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._release)

    def explain(self, exc: BaseException) -> str:
        """What went wrong, with the server's exit code and stderr tail when it has died."""
        text = _exception_text(exc)
        if self.http is not None:
            text = _scrub(text, self.http[1])
        stdio = self.stdio
        if stdio is not None and stdio.returncode is not None:
            code = stdio.returncode
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            tail = "\n".join(stdio.stderr_tail().splitlines()[-8:])[-1000:]
            shown = f"; its stderr ended with:\n{escape_controls(tail, keep=chr(10))}" if tail else ""
            return f"the server {how} ({text}){shown}"
        return text

    async def request(
        self, what: str, make: Callable[[ClientSession], Awaitable[_T]], timeout: float
    ) -> _T:
        """Send one request (``make(session)``) and wait at most ``timeout`` seconds for it."""

        async def go() -> _T:
            session = self.session
            if session is None:
                why = "was closed" if self.closed else "is not running"
                stdio = self.stdio
                if stdio is not None and stdio.returncode is not None:
                    why = self.explain(MCPServerError("no longer running"))
                raise MCPServerError(f"{self.label}: {what} failed: {why}")
            try:
                return await asyncio.wait_for(make(session), timeout)
            except asyncio.TimeoutError:
                note = (
                    f" (it sent a message that could not be read: {self.malformed})" if self.malformed else ""
                )
                raise MCPServerError(
                    f"{self.label}: {what} got no answer within {timeout:g}s{note}"
                ) from None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.stdio is not None and self.stdio.returncode is None:
                    await asyncio.sleep(0)  # let the transport notice an exit it is reading
                raise MCPServerError(f"{self.label}: {what} failed: {self.explain(exc)}") from None

        return await self.on_loop(go)


async def _settled(future: concurrent.futures.Future[None] | None, timeout: float) -> bool:
    """Wait up to ``timeout`` for a future of the connection's loop, from any loop; never cancels
    it, and never leaves an exception unretrieved."""
    if future is None:
        return True
    wrapped = asyncio.wrap_future(future)
    wrapped.add_done_callback(lambda f: f.cancelled() or f.exception())
    done, _ = await asyncio.wait([wrapped], timeout=timeout)
    return bool(done)


def _exception_text(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an exception group (task groups raise them)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(_exception_text(e) for e in inner)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _scrub(text: str, headers: Mapping[str, object]) -> str:
    from sigform.lm.credentials import Credential, scrub

    secrets: list[str] = []
    for value in headers.values():
        if isinstance(value, Credential):
            secrets += value.known_values()
    return scrub(text, secrets)


@contextlib.asynccontextmanager
async def _http_streams(url: str, headers: Mapping[str, object]) -> Any:
    """The SDK's streamable-HTTP transport; headers resolved as credentials on every request."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from sigform.lm.credentials import resolve_value

    class _Headers(httpx2.Auth):  # resolved per request: a callable credential may refresh
        def auth_flow(self, request: Any) -> Any:
            for name, value in headers.items():
                request.headers[name] = str(resolve_value(value))
            yield request

    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(auth=_Headers(), timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as (read, write),
    ):
        yield read, write


class MCPClient:
    """One MCP server as a source of sigform tools (see the module docstring).

    Build it with :meth:`stdio` or :meth:`http`. Options (both):

    Args:
        name: what messages and approval prompts call the server (default: the command's name or
            the URL's host). Chosen by you, never by the server.
        requires_approval: ``True`` (every tool of this server), a collection of tool names (just
            those; a name the server does not have is an error when listing), or a rule
            ``(tool, args) -> bool`` as for :class:`~sigform.tools.Tool`. Default False.
        timeout: seconds one tool call (or listing) may take before it is an error result.
        startup_timeout: seconds the server gets to start and answer ``initialize``.
        prefix: put before every tool name (``prefix="fs_"``: ``fs_read_file``), to keep the names
            of two servers apart.
        setup, on_exit, handlers_once, system_prompt, safe: as for :class:`~sigform.tools.Tool`,
            given to every tool of the server.
    """

    def __init__(
        self,
        *,
        _label: str,
        _stdio: StdioServer | None = None,
        _http: tuple[str, Mapping[str, object]] | None = None,
        name: str,
        requires_approval: bool | Collection[str] | Callable[[Tool, dict[str, Any]], object] = False,
        timeout: float = 60.0,
        startup_timeout: float = 30.0,
        prefix: str = "",
        setup: Hook | None = None,
        on_exit: Hook | None = None,
        handlers_once: bool = False,
        system_prompt: str | None = None,
        safe: bool = False,
    ) -> None:
        if timeout <= 0 or startup_timeout <= 0:
            raise ToolError(f"MCP server `{name}`: timeout and startup_timeout must be positive")
        if not isinstance(requires_approval, (bool, Collection)) and not callable(requires_approval):
            raise ToolError(
                f"MCP server `{name}`: requires_approval must be True/False, a collection of tool "
                f"names or a callable (tool, args) -> bool, got {requires_approval!r}"
            )
        if isinstance(requires_approval, str):
            raise ToolError(
                f"MCP server `{name}`: requires_approval={requires_approval!r} is one string; pass a set "
                f"of tool names, e.g. {{{requires_approval!r}}}"
            )
        self.name = name
        self.requires_approval = requires_approval
        self.timeout = float(timeout)
        self.startup_timeout = float(startup_timeout)
        self.prefix = prefix
        self._tool_options: dict[str, object] = {
            "setup": setup,
            "on_exit": on_exit,
            "handlers_once": handlers_once,
            "system_prompt": system_prompt,
            "safe": safe,
        }
        self._conn = _Connection(_label, _stdio, _http)
        self._tools: list[MCPTool] | None = None
        weakref.finalize(self, self._conn.abandon)

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPClient:
        """A server run as ``command args...`` (no shell), spoken to over its stdin and stdout.

        Its environment is the MCP SDK's safe default (``PATH``, ``HOME``, ``USER``, ``SHELL``,
        ``TERM``, ``LOGNAME``; not your API keys) plus ``env``. Nothing starts until the first use
        (``with``, :meth:`start` or :meth:`tools`).
        """
        from sigform.tools._mcp_stdio import StdioServer

        if not isinstance(command, str) or not command:
            raise ToolError(f"MCPClient.stdio needs a command (a program name or path), got {command!r}")
        if isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args):
            raise ToolError(
                f"MCPClient.stdio: args must be a list of strings (an argv, no shell), got {args!r}"
            )
        name = name or os.path.basename(command) or command
        _require_sdk()
        from mcp.client.stdio import get_default_environment

        environment = {**get_default_environment(), **(env or {})}
        shown = " ".join([os.path.basename(command), *args])
        label = f"MCP server `{escape_controls(name)}` ({escape_controls(shorten(shown, 120))})"
        server = StdioServer([command, *args], environment, cwd)
        return cls(_label=label, _stdio=server, name=name, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, object] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPClient:
        """A streamable-HTTP server at ``url``. ``headers`` values are credentials like every
        other in sigform: ``"env:NAME"``, ``"cmd:..."``, a callable (called for every request, so
        tokens may refresh) or a literal; they never appear in a repr, a log line or an error."""
        from sigform.lm.credentials import Credential, is_secret_header, redact_url, split_url, url_secrets

        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ToolError(f"MCPClient.http needs an http:// or https:// URL, got {redact_url(str(url))!r}")
        if url_secrets(url):  # the SDK logs the URL it connects to
            raise ToolError(
                f"MCPClient.http: the URL {redact_url(url)!r} carries credentials; pass them as headers "
                "instead, e.g. headers={'Authorization': 'env:MY_MCP_TOKEN'} (holding 'Bearer ...')"
            )
        creds = {
            str(key): Credential(str(key), value, secret=is_secret_header(str(key)))
            for key, value in (headers or {}).items()
        }
        host = split_url(url).hostname or "server"
        name = name or host
        _require_sdk()
        label = f"MCP server `{escape_controls(name)}` ({redact_url(url)})"
        return cls(_label=label, _http=(url, creds), name=name, **options)

    # -- lifetime ------------------------------------------------------------------------------
    async def astart(self) -> MCPClient:
        """Start the server (a no-op once started); raises :class:`MCPServerError` if it cannot."""
        await self._conn.start(self.startup_timeout)
        return self

    def start(self) -> MCPClient:
        """Synchronous :meth:`astart`."""
        return run_sync(self.astart)

    async def aclose(self) -> None:
        """End the session and the server process (bounded: a stuck server is killed)."""
        await self._conn.stop()

    def close(self) -> None:
        """Synchronous :meth:`aclose`."""
        if os.getpid() == self._conn.owner:
            run_sync(self.aclose)

    def __enter__(self) -> MCPClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPClient:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def pid(self) -> int | None:
        """The process id of a stdio server (on Linux, its supervisor's: the server is its child)."""
        stdio = self._conn.stdio
        return stdio.pid if stdio is not None else None

    @property
    def returncode(self) -> int | None:
        """A stdio server's exit code once it has exited (0: it ended when its stdin closed)."""
        stdio = self._conn.stdio
        return stdio.returncode if stdio is not None else None

    # -- tools ---------------------------------------------------------------------------------
    async def atools(self) -> list[MCPTool]:
        """The server's tools as sigform tools (listed once, then remembered)."""
        if self._tools is None:
            await self.astart()

            async def list_all(session: ClientSession) -> list[ToolSpec]:
                found: list[ToolSpec] = []
                cursor: str | None = None
                while True:
                    if cursor is None:
                        page = await session.list_tools()
                    else:
                        from mcp_types import PaginatedRequestParams

                        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                    found += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        return found

            specs = await self._conn.request("listing its tools", list_all, self.timeout)
            self._tools = self._make_tools(specs)
        return list(self._tools)

    def tools(self) -> list[MCPTool]:
        """Synchronous :meth:`atools`."""
        return run_sync(self.atools)

    def _make_tools(self, specs: Sequence[ToolSpec]) -> list[MCPTool]:
        rule = self.requires_approval
        names = {spec.name for spec in specs}
        if isinstance(rule, Collection) and not isinstance(rule, (bool, str)):
            unknown = sorted(set(rule) - names)
            if unknown:
                raise ToolError(
                    f"{self._conn.label}: requires_approval names tool(s) {unknown} the server does not "
                    f"have; its tools are {sorted(names)}"
                )
        tools: list[MCPTool] = []
        seen: dict[str, str] = {}
        for spec in specs:
            if isinstance(rule, bool) or callable(rule):
                needs: ApprovalRule = rule
            else:
                needs = spec.name in rule
            tool = MCPTool(self, spec, requires_approval=needs, **self._tool_options)
            if tool.name in seen:
                raise ToolError(
                    f"{self._conn.label}: tools {seen[tool.name]!r} and {spec.name!r} both become "
                    f"`{tool.name}`; rename one on the server"
                )
            seen[tool.name] = spec.name
            tools.append(tool)
        return tools

    async def acall(self, tool: str, arguments: Mapping[str, object] | None = None) -> Any:
        """Call ``tool`` by its server name; returns the SDK's ``CallToolResult``."""
        await self.astart()
        return await self._conn.request(
            f"the call to `{escape_controls(tool)}`",
            lambda session: session.call_tool(tool, dict(arguments or {})),
            self.timeout,
        )

    def __repr__(self) -> str:
        return f"MCPClient({self._conn.label})"


def _tool_name(prefix: str, remote: str, label: str) -> str:
    name = prefix + _NAME_CHARS.sub("_", remote)
    if not 1 <= len(name) <= 64:
        raise ToolError(
            f"{label}: tool name {escape_controls(shorten(remote, 80))!r} cannot be offered to a model "
            "(1-64 letters, digits, '_' or '-' after replacing other characters with '_')"
        )
    return name


class MCPTool(Tool):
    """A tool of an MCP server (see the module docstring). ``remote_name`` is the server's name
    for it; ``name`` the one the model uses (the same, with ``prefix`` and any character the
    function-calling APIs refuse replaced by ``_``)."""

    def __init__(
        self,
        client: MCPClient,
        spec: ToolSpec,
        *,
        requires_approval: ApprovalRule = False,
        **options: Any,
    ) -> None:
        label = client._conn.label
        self.client = client
        self.server = client.name
        self.remote_name: str = spec.name
        description = escape_controls(str(spec.description or spec.title or ""), keep="\n")
        super().__init__(
            self._call_remote,
            name=_tool_name(client.prefix, spec.name, label),
            description=shorten(description, _MAX_DESCRIPTION),
            requires_approval=requires_approval,
            args=_AnyArguments,
            **options,
        )
        schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
        self.parameters = _clean_schema(schema)
        self._validator = _schema_validator(self.parameters)

    def validate(self, arguments: Mapping[str, object] | str | None) -> dict[str, Any]:
        """Check the model's arguments against the server's JSON schema (the server checks too)."""
        from sigform.tools.schema import decode_arguments

        values = decode_arguments(self.name, arguments)
        try:
            problems = [_field_error(error) for error in self._validator.iter_errors(values)]
        except Exception as exc:  # the schema itself is broken (a bad type name, an unresolvable $ref)
            raise ToolArgumentsError(
                f"the arguments of tool `{self.name}` cannot be checked: the server's schema for them is "
                f"not usable JSON Schema ({shorten(_exception_text(exc), 200)})",
                tool=self.name,
            ) from None
        if problems:
            raise ToolArgumentsError(
                f"invalid arguments for tool `{self.name}`", tool=self.name, errors=problems
            )
        return values

    def describe_call(self, args: Mapping[str, object]) -> str:
        """The approval text: the server, the tool and the exact arguments (JSON, escaped)."""
        if self._describe is not None:
            return super().describe_call(args)
        shown = json.dumps(dict(args), ensure_ascii=False, default=str)
        if len(shown) > 100:
            shown = json.dumps(dict(args), ensure_ascii=False, default=str, indent=2)
        head = f"{self.client._conn.label} wants to run `{self.name}`"
        if self.remote_name != self.name:
            head += f" (its `{escape_controls(self.remote_name)}`)"
        return f"{head} with:\n{escape_controls(shown, keep=chr(10))}"

    async def execute(self, args: dict[str, Any]) -> ToolResult:
        try:
            result = await self.client.acall(self.remote_name, args)
        except Exception as exc:
            logger.debug("MCP tool %s failed", self.name, exc_info=True)
            return ToolResult.error(str(exc) if isinstance(exc, MCPServerError) else _exception_text(exc))
        return result_from_mcp(result)

    async def _call_remote(self, **args: object) -> ToolResult:
        return await self.execute(args)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """Call the tool synchronously; returns the :class:`ToolResult`."""
        if args:
            raise TypeError(f"MCP tool `{self.name}` takes keyword arguments only")
        return self.run(kwargs)

    def __repr__(self) -> str:
        flags = " requires_approval" if self.requires_approval is not False else ""
        return f"MCPTool({self.name!r} of MCP server {escape_controls(self.server)!r}{flags})"


_REQUIRED = re.compile(r"^'(.*)' is a required property$", re.S)


def _field_error(error: Any) -> FieldError:
    """One JSON-schema validation error as sigform reports a bad argument."""
    path = [str(p) for p in error.absolute_path]
    missing = _REQUIRED.match(error.message) if error.validator == "required" else None
    if missing is not None:
        return FieldError(
            field=".".join([*path, missing.group(1)]),
            expected="a value (required)",
            seen="nothing",
            message="missing",
        )
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        expected = f"no such argument; arguments are {', '.join(allowed) or 'none'}"
    else:
        expected = f"{error.validator} {shorten(error.validator_value, 120)}"
    return FieldError(
        field=".".join(path) or "(arguments)",
        expected=expected,
        seen=shorten(error.instance, 80),
        message=shorten(error.message, 300),
    )


def _clean_schema(schema: Mapping[str, object]) -> dict[str, object]:
    """The server's input schema as function-calling APIs expect it (an object schema)."""
    out = dict(schema)
    out.pop("title", None)
    out["type"] = "object"
    out.setdefault("properties", {})
    return out


def _schema_validator(schema: dict[str, object]) -> Any:
    """A validator for the server's argument schema. Not checked against the metaschema here (20 ms
    a tool): a schema that cannot be used fails the call that needs it, as an error result."""
    from jsonschema.validators import validator_for
    from referencing import Registry

    checked = _with_bounded_patterns(validator_for(schema))
    return checked(schema, registry=Registry())  # $refs resolve inside it, never fetched


# a server's `pattern` is a regular expression from a party sigform does not trust: matched with a
# time limit (jsonschema's own check uses `re`, which `^(a+)+$` against 30 characters keeps busy
# for minutes, in the agent's thread, outside the call's timeout)
_PATTERN_SECONDS = 0.25


@functools.cache
def _with_bounded_patterns(base: object) -> Any:
    import regex
    from jsonschema import ValidationError
    from jsonschema.validators import extend

    def pattern(validator: Any, expression: Any, instance: Any, _schema: object) -> Iterator[object]:
        if not validator.is_type(instance, "string"):
            return
        try:
            found = regex.search(expression, instance, timeout=_PATTERN_SECONDS)
        except TimeoutError:
            yield ValidationError(
                f"could not be checked against the server's pattern {shorten(repr(expression), 80)} "
                f"within {_PATTERN_SECONDS} s (a pattern that backtracks without end): not sent"
            )
            return
        if found is None:
            yield ValidationError(f"{instance!r} does not match {expression!r}")

    return extend(base, validators={"pattern": pattern})


def result_from_mcp(result: object) -> ToolResult:
    """An MCP ``CallToolResult`` as a :class:`ToolResult`.

    Text parts become the text the model reads; images become :class:`sigform.Image` values sent
    as image parts; audio, resources and links are described in the text; structured content is
    the value (and the text, when the server sent no text). ``isError`` makes an error result.
    """
    from sigform.types import Image

    texts: list[str] = []
    images: list[Image] = []
    items: list[object] = []  # the value: text and images in the server's order
    for part in getattr(result, "content", None) or []:
        kind = getattr(part, "type", None)
        if kind == "text":
            texts.append(part.text)
            items.append(part.text)
        elif kind == "image":
            try:
                image = Image.from_base64(part.data, part.mime_type)
            except Exception as exc:
                texts.append(f"[an image the server sent could not be read: {shorten(str(exc), 200)}]")
            else:
                images.append(image)
                items.append(image)
                texts.append(f"[image {len(images)}: {part.mime_type}]")
        elif kind == "audio":
            texts.append(f"[audio ({part.mime_type}) not shown]")
        elif kind == "resource":
            res = part.resource
            text = getattr(res, "text", None)
            texts.append(
                text if text is not None else f"[binary resource {res.uri} ({res.mime_type}) not shown]"
            )
        elif kind == "resource_link":
            texts.append(f"[resource: {part.uri}]")
        else:
            texts.append(f"[content of type {kind!r} not shown]")
    structured = getattr(result, "structured_content", None)
    text = "\n".join(texts)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    if getattr(result, "is_error", False):
        return ToolResult.error(text or "the tool reported an error without a message", images=tuple(images))
    if structured is not None:
        value: object = structured
    elif images:
        value = items
    else:
        value = text
    return ToolResult.success(value, for_llm=text, images=tuple(images))
