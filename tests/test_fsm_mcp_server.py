"""An MCP server's machine as a table (every (state, trigger) pair is a row or a rejection),
and its one owner, `McpServers`, moving it in this process over the real test server
(tests/mcp/tools_server.py): starting, failed, ready, lost, started again, closed."""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.fsm.machine import IllegalTransition
from acp_fsm.fsm.mcp_server import DOWN, MCP_SERVER, McpServerState, McpServerTrigger
from acp_fsm.mcp.servers import McpServers
from acp_fsm.protocol.cancel import CancellationToken

S, T = McpServerState, McpServerTrigger
SERVER = Path(__file__).parent / "mcp" / "tools_server.py"

# Written out by hand as a second witness of the design.
EXPECTED: dict[tuple[McpServerState, McpServerTrigger], McpServerState] = {
    (S.STARTING, T.STARTED): S.READY,
    (S.FAILED, T.STARTED): S.READY,  # a prompt tried it again
    (S.LOST, T.STARTED): S.READY,
    (S.STARTING, T.FAIL): S.FAILED,
    (S.FAILED, T.FAIL): S.FAILED,
    (S.LOST, T.FAIL): S.LOST,  # tried again in vain: still lost, for its own reason
    (S.READY, T.LOSE): S.LOST,
    (S.STARTING, T.CLOSE): S.CLOSED,
    (S.READY, T.CLOSE): S.CLOSED,
    (S.FAILED, T.CLOSE): S.CLOSED,
    (S.LOST, T.CLOSE): S.CLOSED,
}


@pytest.mark.parametrize(
    ("state", "trigger"), list(itertools.product(McpServerState, McpServerTrigger)), ids=str
)
def test_every_pair_is_a_row_or_a_rejection(
    state: McpServerState, trigger: McpServerTrigger
) -> None:
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(IllegalTransition):
            MCP_SERVER.step(state, trigger)
    else:
        assert MCP_SERVER.step(state, trigger) == expected


def test_a_prompt_tries_again_what_is_down() -> None:
    assert set(DOWN) == {S.FAILED, S.LOST}
    assert MCP_SERVER.initial == S.STARTING and MCP_SERVER.final == (S.CLOSED,)


def entry(name: str, command: str = sys.executable) -> dict[str, Any]:
    return {"name": name, "command": command, "args": [str(SERVER), "stdio"], "env": []}


async def test_servers_move_by_their_machine(tmp_path: Path) -> None:
    servers = McpServers.of([entry("tools"), entry("gone", str(tmp_path / "none"))], "/")
    assert servers.status() == ["tools (stdio): starting", "gone (stdio): starting"]
    await servers.start()
    try:
        status = servers.status()
        assert status[0].startswith("tools (stdio): running; tools: add, echo")
        assert status[1].startswith("gone (stdio): failed (MCP server 'gone' could not be")
        [failed] = servers.take_notices()
        assert "'gone'" in failed and servers.take_notices() == []  # told once
        offered = await servers.offered()
        assert "mcp__tools__add" in offered

        connection, _ = offered["mcp__tools__crash"]
        with pytest.raises(Exception, match="crashing now"):
            await connection.call("crash", {}, CancellationToken("call"), 10.0)
        assert servers.status()[0].startswith("tools (stdio): lost (")
        assert await servers.offered() == {}  # a lost server's tools are not offered
        [lost] = servers.take_notices()
        assert lost.startswith("MCP server 'tools'") and "no longer available" in lost

        await asyncio.gather(*servers.retry())  # as a new prompt does, in the background
        assert servers.status()[0].startswith("tools (stdio): running; tools: add")
        assert servers.status()[1].startswith("gone (stdio): failed (")
        assert servers.take_notices() == []  # a failure told is not told again
    finally:
        await servers.close()
    assert repr(servers) == "<McpServers 0 of 2 ready>"
