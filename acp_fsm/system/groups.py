"""Process groups: how the agent signals and waits on the helpers it starts itself.

A tool's worker (a search's, a fetched page's) and a local MCP server each lead a process group
of its own, so that it and everything it started can be stopped together;
`acp_fsm.system.reaper` stops the groups still running if the agent itself dies first. Commands
run under a keeper instead (`acp_fsm.system.keeper`), which the agent never signals around.
"""

from __future__ import annotations

import asyncio
import contextlib
import os


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to the group; False when no process of it could be signalled."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def settle(future: asyncio.Future[None], seconds: float) -> bool:
    """Wait up to `seconds` for `future` without cancelling it; True when it is done."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(future), seconds)
    return future.done()
