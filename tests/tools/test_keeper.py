"""The keeper every command runs under (`acp_fsm.system.keeper`), driven as the agent drives it
(`acp_fsm.system.kept`): real keeper processes, real commands."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fsm.system.kept import KEEPER_SCRIPT, Kept, spawn_kept
from tests.e2e.support import unique_sleep, unseen
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S


async def kept(
    command: str, *, ends_with_leader: bool = False
) -> tuple[asyncio.subprocess.Process, Kept]:
    return await spawn_kept(
        asyncio.create_subprocess_exec,
        ("sh", "-c", command),
        lambda proc: proc.kill(),
        ends_with_leader=ends_with_leader,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )


async def test_it_lasts_while_anything_below_it_runs_and_stops_it_all() -> None:
    child, daemon = unique_sleep(), unique_sleep()
    proc, keeper = await kept(f"{unseen(child)} & (setsid sh -c '{unseen(daemon)} &' &); exit 3")
    assert await asyncio.wait_for(keeper.exited, INTERRUPTED_S) == 3  # the shell's status
    await wait_until(lambda: live_processes(child) and live_processes(daemon), "both sleeps")
    assert proc.returncode is None  # what the shell started still runs

    keeper.stop(1.0)
    assert await asyncio.wait_for(proc.wait(), INTERRUPTED_S) == 3  # it ends as the shell did
    assert keeper.stopped == 2
    assert not live_processes(child) and not live_processes(daemon)


async def test_sigkill_follows_sigterm_after_the_grace() -> None:
    stubborn = unique_sleep()
    proc, keeper = await kept(
        f"trap '' TERM; setsid sh -c 'trap \"\" TERM; {unseen(stubborn)}' & wait"
    )
    await wait_until(lambda: live_processes(stubborn), "the sleep")
    keeper.stop(0.3)
    assert await asyncio.wait_for(proc.wait(), INTERRUPTED_S) == -signal.SIGKILL
    assert not live_processes(stubborn)


async def test_with_the_leader_what_it_left_is_killed_when_it_exits() -> None:
    left = unique_sleep()
    proc, keeper = await kept(f"setsid {unseen(left)} & sleep 0.1; exit 4", ends_with_leader=True)
    assert await asyncio.wait_for(proc.wait(), INTERRUPTED_S) == 4
    assert keeper.exited.result() == 4
    assert not live_processes(left)


async def test_a_command_that_cannot_start_is_an_os_error() -> None:
    spawned: list[asyncio.subprocess.Process] = []
    with pytest.raises(FileNotFoundError):
        await spawn_kept(
            asyncio.create_subprocess_exec,
            ("/nonexistent/command",),
            spawned.append,
            stdin=subprocess.DEVNULL,
        )
    assert await asyncio.wait_for(spawned[0].wait(), INTERRUPTED_S) == 127


def test_a_keeper_whose_caller_is_gone_before_it_starts_runs_nothing(tmp_path: Path) -> None:
    """The lifeline closed while the keeper started (a cancel, the agent killed): the command
    never runs."""
    ours, theirs = socket.socketpair()
    ours.close()
    marker = tmp_path / "ran"
    keeper = subprocess.run(
        [
            *(sys.executable, "-I", "-S", str(KEEPER_SCRIPT), str(theirs.fileno()), "tree"),
            *("sh", "-c", f"touch {marker}"),
        ],
        pass_fds=(theirs.fileno(),),
        timeout=INTERRUPTED_S,
        check=False,
    )
    theirs.close()
    assert keeper.returncode == 0
    assert not marker.exists()


async def test_a_keeper_whose_caller_dies_kills_everything_below_it() -> None:
    escaped = unique_sleep()
    proc, keeper = await kept(f"setsid {unseen(escaped)} & wait")
    await wait_until(lambda: live_processes(escaped), "the sleep")
    keeper.close()  # as the agent's death closes it
    assert await asyncio.wait_for(proc.wait(), INTERRUPTED_S) == -signal.SIGKILL
    assert not live_processes(escaped)


async def test_the_output_pipe_is_the_command_s_alone() -> None:
    """The keeper lets go of the pipes it passes on: the output ends with the command's."""
    proc, _ = await spawn_kept(
        asyncio.create_subprocess_exec,
        ("sh", "-c", "echo out"),
        lambda proc: proc.kill(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.read(), INTERRUPTED_S) == b"out\n"
    assert await asyncio.wait_for(proc.wait(), INTERRUPTED_S) == 0


# Modules a keeper has no use for, which `signal`, `contextlib` or `typing` would bring in.
HEAVY_IMPORTS = {"enum", "functools", "collections", "contextlib", "typing", "re"}


def test_a_keeper_starts_without_the_modules_it_has_no_use_for() -> None:
    """Every command waits for its keeper to start (bench/commands.py), and the imports are
    a third of that start: the keeper, run as `spawn_kept` runs it, imports none of them."""
    ours, theirs = socket.socketpair()
    with ours:
        keeper = subprocess.run(
            [
                *(sys.executable, "-I", "-S", "-X", "importtime", str(KEEPER_SCRIPT)),
                *(str(theirs.fileno()), "leader", "true"),
            ],
            pass_fds=(theirs.fileno(),),
            capture_output=True,
            text=True,
            timeout=INTERRUPTED_S,
            check=False,
        )
        theirs.close()
        said = ours.recv(4096).decode()
    assert keeper.returncode == 0, keeper.stderr
    assert said.startswith("started ") and "exit 0" in said
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in keeper.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "select" in imported  # what was read is the keeper's own list
    assert imported.isdisjoint(HEAVY_IMPORTS), sorted(imported & HEAVY_IMPORTS)
