"""`acp-fsm conformance` leaves nothing a tested agent started running, not even a process
that left the agent's process group (`setsid`): each agent runs under a keeper
(`acp_fsm.system.keeper`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.support import unique_sleep, unseen
from tests.harness import ROOT, live_processes
from tests.timing import INTERRUPTED_S


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
