"""Tools on hostile inputs through the real agent: a named pipe where a file is expected, and a
regular expression that backtracks catastrophically. The agent stays responsive, answers a
cancel at once, leaves no process behind and exits on stdin EOF."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    BARE,
    EDITOR,
    Agent,
    Launcher,
    args,
    message_chunks,
    tool_results,
)
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S

# Backtracks exponentially on `EVIL_LINE`: a single match takes tens of seconds with the GIL
# held, which in the agent's own process would stop every session.
CATASTROPHIC = r"(a+)+$"
EVIL_LINE = "a" * 28 + "!\n"
FIFO_REFUSED = (
    "Not a regular file: pipe is a named pipe; only regular files can be read or "
    "changed with this tool"
)


def search_workers(agent: Agent) -> list[int]:
    """Live search worker processes `agent` started (children of its process)."""
    assert agent.proc.proc is not None
    return live_processes("acp_fsm.tools.search_worker", parent=agent.proc.proc.pid)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("capabilities", "provider"),
    [pytest.param(EDITOR, "anthropic", id="editor"), pytest.param(BARE, "openai", id="disk")],
)
async def test_a_fifo_is_refused_and_the_agent_exits(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, object],
    provider: str,
) -> None:
    os.mkfifo(project / "pipe")
    agent = await launch.start(provider, capabilities=capabilities)
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("read-1", "read_file", args(path="pipe")),
                Call("write-1", "write_file", args(path="pipe", content="x")),
            )
        ),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "read the pipe")

    assert turn.stop_reason == "end_turn"
    assert turn.updates[-1] == message_chunks("done")[0]
    is_error = True if provider == "anthropic" else None
    assert tool_results(server.requests[-1]) == {
        "read-1": (FIFO_REFUSED, is_error),
        "write-1": (FIFO_REFUSED, is_error),
    }
    # no fs/* request; and a write that cannot work is refused before anyone is asked
    assert agent.editor.methods() == []
    started = time.monotonic()
    await launch.close(agent)
    assert time.monotonic() - started < INTERRUPTED_S


async def test_a_catastrophic_search_leaves_the_agent_responsive_and_cancellable(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "evil.txt").write_text(EVIL_LINE)
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("grep-1", "search_files", args(pattern=CATASTROPHIC)),)))
    pending = await agent.start_prompt(session, "search")
    try:
        await wait_until(lambda: search_workers(agent), "the search worker to start")
        started = time.monotonic()
        other = await agent.new_session(project)  # the event loop serves requests meanwhile
        assert other and time.monotonic() - started < INTERRUPTED_S

        started = time.monotonic()
        await agent.cancel(session)
        turn = await pending.result()

        assert time.monotonic() - started < INTERRUPTED_S
        assert turn.stop_reason == "cancelled"
        assert search_workers(agent) == []
    finally:
        kill_all(search_workers(agent))
    server.script(Reply(text="all good"))
    assert (await agent.prompt(session, "and now?")).stop_reason == "end_turn"


async def test_stdin_eof_during_a_search_exits_and_stops_the_worker(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "evil.txt").write_text(EVIL_LINE)
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("grep-1", "search_files", args(pattern=CATASTROPHIC)),)))
    await agent.start_prompt(session, "search")
    workers = await wait_until(lambda: search_workers(agent), "the search worker to start")
    try:
        started = time.monotonic()
        await launch.close(agent)
        assert time.monotonic() - started < INTERRUPTED_S + 1.0
        running = set(live_processes("acp_fsm.tools.search_worker"))
        assert [pid for pid in workers if pid in running] == []
    finally:
        kill_all([pid for pid in workers if pid in live_processes("search_worker")])
