"""`acp-fsm conformance` leaves nothing a tested agent started running, not even a process
that left the agent's process group (`setsid`): each agent runs under a keeper
(`acp_fsm.system.keeper`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_fsm.devkit.editor.link import AgentLink
from tests.e2e.support import unique_sleep, unseen
from tests.harness import ROOT, agent_env, live_processes
from tests.timing import INTERRUPTED_S

# When a start is given up, across the keeper's start: most cancels land while it starts.
GIVE_UP_AFTER_S = [step * 0.003 for step in range(20)]


def test_what_a_tested_agent_left_running_is_stopped(tmp_path: Path) -> None:
    escaped = unique_sleep()
    agent = (
        f"setsid {unseen(escaped)} </dev/null >/dev/null 2>&1 & "
        f"exec {sys.executable} -m tests.conformance.broken.base"
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "acp-fsm"),
            *("conformance", "--only", "handshake", "--env", f"PYTHONPATH={ROOT}"),
            *("--", "sh", "-c", agent),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "handshake." in done.stdout
    deadline = time.monotonic() + INTERRUPTED_S  # the tool is done: so are they, at once
    while live_processes(escaped) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_processes(escaped) == [], "what the tested agents left is still running"


def test_a_start_given_up_has_waited_for_its_keeper(caplog: pytest.LogCaptureFixture) -> None:
    """An agent's start that failed, or that a check's time limit cancelled at any instant of
    it, returns once its keeper has exited: a keeper nobody waited for outlives the event
    loop that started it (asyncio logs that the loop handling its pid is closed), and its
    process object warns when collected, in whatever test runs then. What the keeper had
    started is ended too."""
    sleep = unique_sleep()

    async def cancelled(after_s: float) -> None:
        start = asyncio.ensure_future(
            AgentLink.spawn(agent_env(), command=tuple(sleep.split()), kept=True)
        )
        await asyncio.sleep(after_s)
        start.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await (await start).kill()  # it started before the cancel

    async def failed() -> None:
        with pytest.raises(FileNotFoundError):
            await AgentLink.spawn(agent_env(), command=("/nonexistent/acp-agent",), kept=True)

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        for after_s in GIVE_UP_AFTER_S:
            asyncio.run(cancelled(after_s))  # the loop closes as soon as the start is given up
        asyncio.run(failed())
        gc.collect()  # a process object not waited for warns now (an error in this run)
    assert [record.getMessage() for record in caplog.records] == []
    assert live_processes(sleep) == []
