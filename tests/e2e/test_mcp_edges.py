"""MCP at the edges of what the editor sends and what servers do: a stdio entry that also
carries an HTTP or SSE tag, secrets in the servers' headers and environment, results larger
than the store or the window, and remote servers that accept a connection and never answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.providers.scripted import ScriptedProvider
from tests.e2e.support import Launcher
from tests.e2e.test_mcp import SERVER


def tagged_stdio(transport: str) -> dict[str, Any]:
    """A stdio entry (command, args, env) that also says it is an HTTP or SSE server."""
    return {"type": transport, "name": "mixed", "command": sys.executable,
            "args": [str(SERVER), "stdio"], "env": []}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_stdio_entry_tagged_as_remote_is_refused_naming_the_field(
        launch: Launcher, server: ScriptedProvider, project: Path, transport: str) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    entry = tagged_stdio(transport)
    setups = [("session/new", {"cwd": str(project), "mcpServers": [entry]}),
              ("session/load", {"sessionId": session, "cwd": str(project),
                                "mcpServers": [entry]}),
              ("session/resume", {"sessionId": session, "cwd": str(project),
                                  "mcpServers": [entry]})]

    for method, params in setups:
        answer = await agent.request(method, params)
        assert answer["error"]["code"] == -32602, (method, answer)
        assert answer["error"]["message"] == ('Invalid params: mcpServers[0]: missing required '
                                              'property "url"'), method
    assert agent.log("handler_failed") == []
