"""The watcher that kills the agent's command groups when the agent dies without cleaning up
(`acp_fsm.system.reaper`). Here the agent's death is the watcher's pipe closing."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from acp_fsm.system.reaper import Reaper
from tests.timing import INTERRUPTED_S


def group() -> subprocess.Popen[bytes]:
    """A command in a process group of its own, as run_command starts them."""
    return subprocess.Popen(["sleep", "30"], start_new_session=True)


def agent_dies(reaper: Reaper) -> None:
    assert reaper._pipe is not None
    os.close(reaper._pipe)


def exits(proc: subprocess.Popen[bytes]) -> int:
    return proc.wait(timeout=INTERRUPTED_S)


def test_registered_groups_die_with_the_agent_and_stopped_ones_are_left() -> None:
    reaper = Reaper()
    doomed, stopped = group(), group()
    try:
        reaper.started(doomed.pid)
        reaper.started(stopped.pid)
        reaper.stopped(stopped.pid)  # the agent stopped it: the number may be reused later
        agent_dies(reaper)
        assert exits(doomed) == -signal.SIGKILL
        time.sleep(0.2)
        assert stopped.poll() is None  # not ours to kill any more
    finally:
        for proc in (doomed, stopped):
            proc.kill()
            proc.wait()


def test_a_new_watcher_learns_the_groups_of_a_lost_one() -> None:
    reaper = Reaper()
    first, second = group(), group()
    try:
        reaper.started(first.pid)
        assert reaper._pid is not None
        lost = reaper._pid
        os.kill(lost, signal.SIGKILL)
        os.waitpid(lost, 0)
        reaper.started(second.pid)  # finds the watcher gone and starts another
        assert reaper._pid not in (None, lost)
        agent_dies(reaper)
        assert exits(first) == -signal.SIGKILL
        assert exits(second) == -signal.SIGKILL
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
