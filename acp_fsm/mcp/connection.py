"""One MCP server of a session, reached through the `mcp` SDK (imported with this module, so
only by sessions that have servers).

The SDK's transports and `ClientSession` are anyio context managers that must be left by the
task that entered them, so each server lives in a task of its own (`_run`): it connects,
initializes, lists the tools, reports ready, and holds everything open until `close`. Calls
come from the turns' tasks. A stdio server's stderr goes to our log (and its last lines into
the reasons we give), never to our stdout.
"""

from __future__ import annotations

import asyncio
import collections
import signal
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import mcp_types as types
import structlog
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from acp_fsm import __version__, env_vars
from acp_fsm.mcp import transport
from acp_fsm.mcp.specs import ServerSpec
from acp_fsm.mcp.transport import STDERR_LINE_CHARS
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.system.groups import signal_group
from acp_fsm.system.reaper import REAPER

log = structlog.get_logger("mcp")

STDERR_TAIL_LINES = 3  # the last lines of a server's stderr, quoted in a failure's reason
# Closing: a server gets this long to exit once its stdin is closed; then its process group
# is killed (the SDK's own escalation takes seconds, which an exiting agent cannot wait).
CLOSE_GRACE_S = 0.5
KILLED_WAIT_S = 1.0  # for the SDK to see the killed server and wind down
CLIENT_INFO = types.Implementation(name="acp-fsm", version=__version__)


# How a server's form reaches the user: (server name, message, requested schema, the id of
# the tool call of this server running now, if one is) -> (action, content).
Elicit = Callable[
    [str, str, dict[str, Any], str | None], Awaitable[tuple[str, dict[str, Any] | None]]
]


class McpUnavailable(Exception):
    """The server could not be started, or is gone; the message names it and says why."""


class McpCallFailed(Exception):
    """A call got no result: an MCP error, or no answer in time."""


class McpConnection:
    """A running MCP server: `start` it, read `tools`, `call` them, `close` it. Once it has
    worked, `on_lost` is told if it stops (`McpServers` moves the server's machine)."""

    def __init__(
        self,
        spec: ServerSpec,
        cwd: str,
        elicit: Elicit | None = None,
        on_lost: Callable[[McpConnection, str], None] | None = None,
    ) -> None:
        self.spec = spec
        self._elicit = elicit
        self._on_lost = on_lost
        # The tool calls waiting on it, by id (None: a subagent's, which cannot ask the user).
        self._calling: list[str | None] = []
        self.tools: list[types.Tool] = []
        self.lost: str | None = None  # why it stopped working, once it has (its calls say it)
        self.stale = False  # it said its tools changed (`notifications/tools/list_changed`)
        self._cwd = cwd
        self._session: ClientSession | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._calls: set[asyncio.Future[Any]] = set()  # abandoned on cancel, still winding down
        self._group: int | None = None  # a stdio server's process group, while it runs
        self._closing: asyncio.Task[None] | None = None  # a failed start, being stopped

    def __repr__(self) -> str:
        state = "lost" if self.lost else "ready" if self._session else "not ready"
        return f"<McpConnection {self.spec.name} {self.spec.transport} {state}>"

    def _lose(self, reason: str) -> None:
        """It stopped working, for `reason`: said once."""
        if self.lost is not None:
            return
        self.lost = reason
        log.warning("mcp_server_lost", server=self.spec.name, reason=reason)
        if self._on_lost is not None:
            self._on_lost(self, reason)

    async def start(self, timeout_s: float, *, left_s: float | None = None) -> None:
        """Connect, initialize and list the tools, within `timeout_s` (of which `left_s` is
        left when the wait began earlier); `McpUnavailable` (the server stopped again) when
        that fails."""
        self._ready = asyncio.get_running_loop().create_future()
        self._ready.add_done_callback(_retrieved)
        self._runner = asyncio.create_task(self._run(), name=f"mcp server {self.spec.name}")
        try:
            await asyncio.wait_for(
                asyncio.shield(self._ready), max(0.0, timeout_s if left_s is None else left_s)
            )
        except asyncio.CancelledError:  # the session closed meanwhile
            await self.close()
            raise
        except Exception as exc:
            # Stopped in the background: the answer does not wait (the watcher kills the
            # group should the agent exit first).
            self._closing = asyncio.create_task(self.close())
            reason = (
                f"did not start within {timeout_s:g} s"
                if isinstance(exc, TimeoutError)
                else f"could not be started: {describe(exc)}"
            )
            raise McpUnavailable(self._why(reason)) from None

    async def refresh_tools(self) -> None:
        """List the tools again if the server said they changed (a failure keeps the old
        list: the next call tells what is wrong)."""
        session = self._session
        if not self.stale or session is None:
            return
        self.stale = False
        try:
            self.tools = await asyncio.wait_for(
                _list_tools(session), env_vars.mcp_startup_timeout_ms() / 1000
            )
        except Exception as exc:
            log.warning("mcp_tools_not_listed", server=self.spec.name, error=describe(exc))
        else:
            log.info("mcp_tools_changed", server=self.spec.name, tools=len(self.tools))

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        timeout_s: float | None,
        on_progress: ProgressFnT | None = None,
        call_id: str | None = None,
    ) -> types.CallToolResult:
        # `call_id`: the editor's id of the call (a form the server sends meanwhile is about
        # it), None for a call that cannot ask the user (a subagent's).
        """Call tool `name`. The turn's token stops the wait at once (the SDK then tells the
        server `notifications/cancelled`): `Cancelled`. `McpCallFailed` for an MCP error or no
        answer within `timeout_s`; `McpUnavailable` when the server is gone. The server's
        progress notifications for the call go to `on_progress`."""
        session = self._session
        if session is None or self.lost is not None:
            raise McpUnavailable(self._why(self.lost or "is not running"))
        call: asyncio.Future[types.CallToolResult] = asyncio.ensure_future(
            session.call_tool(name, arguments, progress_callback=on_progress)
        )
        fired: asyncio.Future[Any] = asyncio.ensure_future(token.wait())
        self._calling.append(call_id)
        try:
            await asyncio.wait(
                {call, fired}, timeout=timeout_s or None, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            self._abandon(call)
            raise
        finally:
            fired.cancel()
            self._calling.remove(call_id)
        if not call.done():
            self._abandon(call)
            if token.is_cancelled:
                raise Cancelled(token.reason or "cancelled")
            raise McpCallFailed(
                f"{name} on MCP server {self.spec.name!r} did not answer within {timeout_s:g} s"
            )
        try:
            return call.result()
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                reason = f"closed the connection ({exc.message})"
                self._lose(reason)
                raise McpUnavailable(self._why(reason)) from None
            raise McpCallFailed(f"MCP server {self.spec.name!r}: {exc.message}") from None
        except Exception as exc:
            raise McpCallFailed(f"MCP server {self.spec.name!r}: {describe(exc)}") from None

    async def close(self) -> None:
        """Stop the server: its stdin is closed, and a stdio server still running after
        `CLOSE_GRACE_S` is killed with its process group. Bounded; never raises."""
        self._stop.set()
        runner, self._runner = self._runner, None
        if runner is None:
            return
        if self._ready is not None and not self._ready.done():
            runner.cancel()  # still starting: nothing to wind down politely
            self._ready.set_exception(McpUnavailable(self._why("was closed while starting")))
        try:
            done, _ = await asyncio.wait({runner}, timeout=CLOSE_GRACE_S)
        finally:  # also when this wait is cancelled (the agent exiting): kill, not leave it
            if not runner.done() and self._group is not None:
                signal_group(self._group, signal.SIGKILL)
        if not done:
            done, _ = await asyncio.wait({runner}, timeout=KILLED_WAIT_S)
        if not done:
            runner.cancel()
            log.warning("mcp_server_not_stopped", server=self.spec.name)

    # ----------------------------------------------------------------- internals

    async def _run(self) -> None:
        assert self._ready is not None
        try:
            async with AsyncExitStack() as stack:
                read, write = await transport.connect(
                    self.spec, self._cwd, stack, self._stderr_line, self._started
                )
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        client_info=CLIENT_INFO,
                        message_handler=self._on_message,
                        elicitation_callback=self._on_elicit if self._elicit else None,
                    )
                )
                await session.initialize()
                self.tools = await _list_tools(session)
                self._session = session
                log.info("mcp_server_ready", server=self.spec.name, tools=len(self.tools))
                self._ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            else:
                self._lose(describe(exc))
        finally:
            self._session = None
            if self._group is not None:  # the SDK has stopped it
                REAPER.stopped(self._group)
                self._group = None

    def _started(self, group: int) -> None:
        self._group = group
        REAPER.started(group)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True  # listed again before the next model call

    async def _on_elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The server asks the user something: a form goes to the editor (a URL is not
        relayed); a failure to ask is the server's error."""
        if not isinstance(params, types.ElicitRequestFormParams) or self._elicit is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST, message="acp-fsm relays only forms to the editor"
            )
        calling = self._calling[-1] if self._calling else None
        if self._calling and calling is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="the tool call is a subagent's, and a subagent cannot ask the user",
            )
        try:
            action, content = await self._elicit(
                self.spec.name, params.message, dict(params.requested_schema), calling
            )
        except Exception as exc:
            log.info("mcp_elicitation_not_relayed", server=self.spec.name, reason=str(exc))
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    def _stderr_line(self, line: str) -> None:
        line = line[:STDERR_LINE_CHARS]
        log.info("mcp_server_stderr", server=self.spec.name, line=line)
        if line.strip(" ^~"):  # not a traceback's underline
            self._stderr.append(line.strip())

    def _abandon(self, call: asyncio.Future[Any]) -> None:
        """Stop waiting for `call`: cancelled, left to wind down on its own."""
        call.cancel()
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)
        call.add_done_callback(_retrieved)  # whatever it ends with, nobody waits for it

    def _why(self, reason: str) -> str:
        said = " | ".join(self._stderr)
        return f"MCP server {self.spec.name!r} {reason}" + (f"; its stderr: {said}" if said else "")


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a future's outcome as seen (its failure is reported where it is awaited)."""
    if not future.cancelled():
        future.exception()


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def describe(exc: BaseException) -> str:
    """A one-line reason, from the first real failure inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return f"no such command {exc.filename!r}" if exc.filename else "no such command"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
