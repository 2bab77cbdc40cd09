"""The agent never outlives its editor.

When an editor quits or crashes, stdin, stdout and stderr close together, so every log line
fails (EPIPE); editors and terminals also stop agents with SIGTERM, SIGHUP (the terminal
closed) or SIGINT (Ctrl+C reaches the whole process group). In every state of a turn the
agent must then exit 0, with the running turn stored as cancelled and its commands killed. A
`kill -9` leaves no cleanup to the agent: the commands it started must still die.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    args,
    stored,
    text_events,
    unique_sleep,
    unreasoned,
)
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S

STATES = ["idle", "streaming", "awaiting_permission", "running_command"]
WAYS = ["editor_quits", "SIGTERM", "SIGHUP", "SIGINT"]


async def enter(
    state: str, agent: Agent, server: ScriptedProvider, project: Path, session: str, command: str
) -> None:
    """Bring the session's turn into `state` (idle: no turn at all)."""
    if state == "idle":
        return
    if state == "streaming":
        server.script(Reply(text=("half ", "an answer"), fault=Hang(text_events(2))))
        pending = await agent.start_prompt(session, "go")
        await wait_until(lambda: len(agent.updates(session, pending.start)) == 2, "two chunks")
    elif state == "awaiting_permission":
        agent.editor.permissions.append(HOLD)
        server.script(Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="x")),)))
        await agent.start_prompt(session, "go")
        await agent.wait_request("session/request_permission")
    else:
        agent.editor.permissions.append("allow_once")
        server.script(Reply(calls=(Call("run-1", "run_command", args(command=command)),)))
        await agent.start_prompt(session, "go")
        await wait_until(lambda: live_processes(command), "the command to start")


async def end_editor(agent: Agent, way: str) -> int:
    """Stop the agent as an editor or a terminal does; its exit code."""
    agent.stop_editor()
    agent.killed = True  # the launcher's teardown must not expect a normal close
    proc = agent.proc.proc
    assert proc is not None
    agent.proc.close_pipe(2)  # every log line from now on fails
    if way == "editor_quits":
        agent.proc.close_pipe(1)
        assert proc.stdin is not None
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, way))
    return await asyncio.wait_for(proc.wait(), INTERRUPTED_S)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("state", STATES)
async def test_the_agent_exits_when_its_editor_goes(
    launch: Launcher, server: ScriptedProvider, project: Path, state: str, way: str
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    command = unique_sleep()
    try:
        await enter(state, agent, server, project, session, command)

        assert await end_editor(agent, way) == 0

        await wait_until(lambda: not live_processes(command), "the command to be killed", 2.0)
    finally:
        for pid in live_processes(command):
            os.kill(pid, signal.SIGKILL)
    transcript = stored(launch.home, session)
    if state == "idle":
        assert transcript == []
    else:
        assert transcript[-1] == ("turn_end", {"stopReason": "cancelled"})
    if state == "streaming":
        assert (
            "assistant",
            {
                "parts": [{"type": "text", "text": "half an answer"}],
                "stopReason": "cancelled",
                "views": {},
            },
        ) in unreasoned(transcript)


@pytest.mark.parametrize("background", [False, True])
async def test_commands_die_with_a_killed_agent(
    launch: Launcher, server: ScriptedProvider, project: Path, background: bool
) -> None:
    """`kill -9` gives the agent no chance to clean up; its commands die all the same, also
    what a command started in the background."""
    first, second = unique_sleep(), unique_sleep()
    command = f"{first} & {second}" if background else first
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("run-1", "run_command", args(command=command)),)))
    try:
        await agent.start_prompt(session, "go")
        markers = [first, second] if background else [first]
        # running under its keeper (the shell's own command line holds both markers)
        await wait_until(
            lambda: (
                agent.proc.logged("command_started") and all(live_processes(m) for m in markers)
            ),
            "the commands",
        )

        await launch.kill(agent)

        await wait_until(
            lambda: not any(live_processes(m) for m in markers),
            "the commands to die with the agent",
            INTERRUPTED_S,
        )
    finally:
        for pid in live_processes(first) + live_processes(second):
            os.kill(pid, signal.SIGKILL)
