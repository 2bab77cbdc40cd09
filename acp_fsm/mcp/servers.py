"""The MCP servers of one session: started together, their tools offered under model-safe
names, closed with the session.

A server that fails to start is reported once (`take_notices`, shown at the next prompt) and
the session goes on without its tools; so does one that is lost later, on the call that finds
it gone.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import config
from acp_fsm.mcp.specs import ServerSpec, server_specs, tool_name

if TYPE_CHECKING:
    from acp_fsm.mcp.connection import McpConnection
    from acp_fsm.tools.base import Tool

log = structlog.get_logger("mcp")


class McpServers:
    """Build with `await McpServers.start(entries, cwd)`; `close` when the session ends."""

    def __init__(self, specs: list[ServerSpec], connections: list[McpConnection],
                 notices: list[str]) -> None:
        self.specs = specs
        self._connections = connections
        self._notices = notices
        self._reported: set[str] = set()  # servers whose loss was told

    def __repr__(self) -> str:
        return f"<McpServers {len(self._connections)} of {len(self.specs)}>"

    @classmethod
    async def start(cls, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...],
                    cwd: str) -> McpServers:
        """Start every server of `entries` at once, each bounded by the start-up timeout."""
        from acp_fsm.mcp.connection import McpConnection, McpUnavailable  # the SDK, now

        specs = server_specs(entries)
        connections = [McpConnection(spec, cwd) for spec in specs]
        timeout_s = config.mcp_startup_timeout_ms() / 1000
        outcomes = await asyncio.gather(*(c.start(timeout_s) for c in connections),
                                        return_exceptions=True)
        started, notices = [], []
        for connection, failure in zip(connections, outcomes, strict=True):
            if failure is None:
                started.append(connection)
            elif isinstance(failure, McpUnavailable):
                log.warning("mcp_server_failed", server=connection.spec.name, reason=str(failure))
                notices.append(f"{failure}. Its tools are not available in this session.")
            else:
                raise failure
        return cls(specs, started, notices)

    def tools(self) -> dict[str, Tool]:
        """The tools of the servers still running, by the name the model sees."""
        from acp_fsm.mcp.tool import McpTool

        taken: set[str] = set()
        tools: dict[str, Tool] = {}
        for connection in self._connections:
            if not connection.alive:
                continue
            for tool in connection.tools:
                name = tool_name(connection.spec.name, tool.name, taken)
                tools[name] = McpTool(connection, tool, name)
        return tools

    def take_notices(self) -> list[str]:
        """What the user has not been told yet: servers that failed to start or were lost."""
        for connection in self._connections:
            name = connection.spec.name
            if connection.lost is not None and name not in self._reported:
                self._reported.add(name)
                self._notices.append(f"MCP server {name!r} {connection.lost}. Its tools are "
                                     "no longer available in this session.")
        notices, self._notices = self._notices, []
        return notices

    async def close(self) -> None:
        """Stop every server (bounded: a stuck one is killed)."""
        await asyncio.gather(*(c.close() for c in self._connections))
