"""An MCP server's machine: one server the editor gave a session, from its start to the
session's end (docs/mcp.md).

    starting --started--> ready --lose--> lost
    starting --fail--> failed
    failed | lost --started--> ready          (a prompt tried it again, in the background)
    failed --fail--> failed                   (... and it failed again: the latest reason)
    lost --fail--> lost                       (... it stays lost, for the reason it was lost)
    any state --close--> closed               (the session closed, or its servers changed)

A server's tools are offered only while it is `ready`. A server that failed or was lost is
told to the user once (it is told again only if it is lost after having worked again), and
each new prompt tries to start it again while the session goes on without its tools.
`acp_fsm.mcp.servers.McpServers` alone moves it; a connection tells it when it is lost.
"""

from __future__ import annotations

from enum import StrEnum

from acp_fsm.fsm.machine import MachineSpec, Row


class McpServerState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    LOST = "lost"
    CLOSED = "closed"


class McpServerTrigger(StrEnum):
    STARTED = "started"
    FAIL = "fail"
    LOSE = "lose"
    CLOSE = "close"


S, T = McpServerState, McpServerTrigger

# States a new prompt tries again from.
DOWN = (S.FAILED, S.LOST)

MCP_SERVER = MachineSpec(
    name="mcp_server",
    states=McpServerState,
    triggers=McpServerTrigger,
    initial=S.STARTING,
    final=(S.CLOSED,),
    groups={"open": (S.STARTING, S.READY, *DOWN)},
    rows=(
        Row(T.STARTED, (S.STARTING, *DOWN), S.READY, doc="connected, initialized, tools listed"),
        Row(T.FAIL, (S.STARTING, S.FAILED), S.FAILED, doc="it did not start within its bound"),
        Row(T.FAIL, S.LOST, S.LOST, doc="tried again, it did not start"),
        Row(T.LOSE, S.READY, S.LOST, doc="its connection closed, or its process ended"),
        Row(T.CLOSE, (S.STARTING, S.READY, *DOWN), S.CLOSED),
    ),
    state_docs={
        S.STARTING: "connecting, initializing and listing its tools, within "
        "ACP_FSM_MCP_STARTUP_TIMEOUT_MS (the SDK's import included)",
        S.READY: "its tools are offered to the model and called",
        S.FAILED: "it did not start: the user is told why once; each prompt tries again",
        S.LOST: "it stopped after working: the user is told once; each prompt tries again",
        S.CLOSED: "stopped with the session (a stdio server's process group killed if it "
        "does not exit)",
    },
)
