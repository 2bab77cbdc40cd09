"""The MCP servers of one session: started together, their tools offered under model-safe
names, closed with the session.

Each server is moved by its machine (`fsm/mcp_server.py`), here alone. A server that fails to
start, or is lost later, is reported once (`take_notices`, shown at the next model call) and
the session goes on without its tools. Each new prompt tries to start it again in the
background (`retry`): its tools are back as soon as it is up, and it is reported again only
if it fails after having worked.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import env_vars
from acp_fsm.blocking import run_blocking
from acp_fsm.fsm.mcp_server import DOWN, MCP_SERVER, McpServerState, McpServerTrigger
from acp_fsm.mcp.specs import ServerSpec, server_specs, tool_name
from acp_fsm.protocol.cancel import CancellationToken, Cancelled

if TYPE_CHECKING:
    import mcp_types as types

    from acp_fsm.mcp.connection import Elicit, McpConnection

log = structlog.get_logger("mcp")

SDK_MODULE = "acp_fsm.mcp.connection"  # imports the `mcp` SDK (half a second, more when busy)
_sdk: asyncio.Future[Any] | None = None  # its import, started by the first session with servers


class McpServers:
    """Make with `McpServers.of(entries, cwd)`, then `await start()`; `close` when the session
    ends (also while it starts)."""

    def __init__(self, specs: list[ServerSpec], cwd: str, elicit: Elicit | None = None) -> None:
        self.specs = specs
        self._cwd = cwd
        self._elicit = elicit  # how the servers' forms reach the user
        self._states = {spec.name: McpServerState(MCP_SERVER.initial) for spec in specs}
        self._reasons: dict[str, str] = {}  # why a server failed or was lost, by name
        self._running: dict[str, McpConnection] = {}  # by name, the latest that started
        self._notices: list[str] = []
        self._told: set[str] = set()  # servers whose failure the user was told of
        self._retries: dict[str, asyncio.Task[None]] = {}
        self._starting: set[McpConnection] = set()  # closed too if the session ends now
        # The model's name of each (server, tool), kept for the session: a name never comes
        # to mean another server's tool (history and "always" answers rely on it).
        self._names: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self._closed = CancellationToken("mcp servers")  # fired by `close`, ends the waits

    def __repr__(self) -> str:
        ready = [name for name, state in self._states.items() if state == McpServerState.READY]
        return f"<McpServers {len(ready)} of {len(self.specs)} ready>"

    def _fire(self, name: str, trigger: McpServerTrigger) -> None:
        before = self._states[name]
        self._states[name] = McpServerState(MCP_SERVER.step(before, trigger))
        log.debug(
            "mcp_server_transition",
            server=name,
            trigger=trigger.value,
            source=before.value,
            dest=self._states[name].value,
        )

    def _ready(self) -> list[McpConnection]:
        """The connections of the servers that are ready, in the editor's order."""
        ready = McpServerState.READY
        return [self._running[s.name] for s in self.specs if self._states[s.name] == ready]

    @classmethod
    def of(
        cls,
        entries: list[dict[str, Any]] | tuple[dict[str, Any], ...],
        cwd: str,
        elicit: Elicit | None = None,
    ) -> McpServers:
        """The servers of `entries`, not started yet."""
        return cls(server_specs(entries), cwd, elicit)

    async def start(self) -> None:
        """Start every server at once, each bounded by the start-up timeout (the SDK's
        import included)."""
        await asyncio.gather(*(self._start(spec) for spec in self.specs))

    async def offered(self) -> dict[str, tuple[McpConnection, types.Tool]]:
        """The tools of the servers running now (listed again where a server said they
        changed), each with its server, by the name the model sees."""
        await asyncio.gather(*(c.refresh_tools() for c in self._ready()))
        offered: dict[str, tuple[McpConnection, types.Tool]] = {}
        for connection in self._ready():  # one may have been lost meanwhile
            for tool in connection.tools:
                key = (connection.spec.name, tool.name)
                name = self._names.get(key)
                if name is None:
                    name = self._names[key] = tool_name(*key, self._taken)
                offered[name] = (connection, tool)
        return offered

    def status(self) -> list[str]:
        """A line per server: its transport, its state and, running, its tools."""
        lines = []
        for spec in self.specs:
            state = self._states[spec.name]
            head = f"{spec.name} ({spec.transport})"
            if state == McpServerState.READY:
                tools = ", ".join(t.name for t in self._running[spec.name].tools) or "no tools"
                lines.append(f"{head}: running; tools: {tools}")
            elif state in DOWN:
                lines.append(f"{head}: {state.value} ({self._reasons[spec.name]})")
            else:
                lines.append(f"{head}: {state.value}")
        return lines

    def retry(self) -> list[asyncio.Task[None]]:
        """Start again, in the background, each server that failed or was lost; the starts
        begun now."""
        begun = []
        for spec in self.specs:
            if self._states[spec.name] in DOWN and spec.name not in self._retries:
                task = asyncio.create_task(self._retry(spec), name=f"mcp retry {spec.name}")
                self._retries[spec.name] = task
                begun.append(task)
        return begun

    def take_notices(self) -> list[str]:
        """What the user has not been told yet: servers that failed to start or were lost."""
        for name, state in self._states.items():
            if state == McpServerState.LOST and name not in self._told:
                self._told.add(name)
                self._notices.append(
                    f"MCP server {name!r} {self._reasons[name]}. Its tools are "
                    "no longer available in this session."
                )
        notices, self._notices = self._notices, []
        return notices

    async def close(self) -> None:
        """Stop every server (bounded: a stuck one is killed)."""
        self._closed.cancel("the session's servers are closed")
        for name, state in self._states.items():
            if state != McpServerState.CLOSED:
                self._fire(name, McpServerTrigger.CLOSE)
        for task in list(self._retries.values()):
            task.cancel()
        await asyncio.gather(*self._retries.values(), return_exceptions=True)
        stopping = [*self._running.values(), *self._starting]
        self._running = {}
        await asyncio.gather(*(c.close() for c in stopping))

    async def _retry(self, spec: ServerSpec) -> None:
        try:
            await self._start(spec)
        finally:
            self._retries.pop(spec.name, None)

    async def _start(self, spec: ServerSpec) -> None:
        """Start one server within the start-up timeout, counted from now: loading the SDK
        counts in it (the first session with servers waits for that)."""
        timeout_s = env_vars.mcp_startup_timeout_ms() / 1000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            await asyncio.wait_for(self._load_sdk(), timeout_s)
        except TimeoutError:
            self._failed(spec, f"MCP server {spec.name!r} did not start within {timeout_s:g} s")
            return
        except Cancelled:
            return  # closed while the SDK was loading: nothing was started
        from acp_fsm.mcp.connection import McpConnection, McpUnavailable  # loaded: no wait

        connection = McpConnection(spec, self._cwd, self._elicit, self._lost)
        self._starting.add(connection)
        try:
            await connection.start(timeout_s, left_s=deadline - loop.time())
        except McpUnavailable as failure:
            self._failed(spec, str(failure))
            return
        finally:
            self._starting.discard(connection)
        if self._states[spec.name] == McpServerState.CLOSED:  # closed as it came up
            await connection.close()
            return
        old = self._running.pop(spec.name, None)
        self._running[spec.name] = connection
        self._told.discard(spec.name)  # working: a later failure is news again
        self._reasons.pop(spec.name, None)
        self._fire(spec.name, McpServerTrigger.STARTED)
        if old is not None:
            await old.close()

    def _lost(self, connection: McpConnection, reason: str) -> None:
        """`connection` stopped working: its server is lost, if it is the server's
        connection now (an old one, replaced by a retry, is closed and not news)."""
        name = connection.spec.name
        if self._running.get(name) is connection and self._states[name] == McpServerState.READY:
            self._reasons[name] = reason
            self._fire(name, McpServerTrigger.LOSE)

    async def _load_sdk(self) -> None:
        """Wait until the SDK is loaded (`Cancelled` if the servers are closed meanwhile)."""
        loading = _sdk_import()
        if not loading.done():
            await self._closed.race(asyncio.shield(loading))
        loading.result()
        self._closed.raise_if_cancelled()

    def _failed(self, spec: ServerSpec, reason: str) -> None:
        """`spec` did not start, for `reason`: logged, and told once at the next model call."""
        if self._states[spec.name] == McpServerState.CLOSED:
            return  # closed while it started: nothing to tell
        log.warning("mcp_server_failed", server=spec.name, reason=reason)
        self._fire(spec.name, McpServerTrigger.FAIL)
        if self._states[spec.name] == McpServerState.FAILED:  # a lost one stays lost
            self._reasons[spec.name] = reason
        if spec.name not in self._told:
            self._told.add(spec.name)
            self._notices.append(f"{reason}. Its tools are not available in this session.")


def _sdk_import() -> asyncio.Future[Any]:
    """The SDK's import, once, in a thread of its own: the event loop goes on meanwhile, so
    a start-up timeout can fire during it and other sessions and turns are not held up. Every
    session's servers wait for the same import; it ends on its own (its token never fires)."""
    global _sdk
    if _sdk is None:
        _sdk = asyncio.ensure_future(
            run_blocking(
                CancellationToken("the MCP SDK's import"), importlib.import_module, SDK_MODULE
            )
        )
    return _sdk
