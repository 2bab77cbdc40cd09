"""Process groups: how the agent signals, watches and stops the groups it starts.

Every child the agent runs (a local command, a search worker, a local MCP server) leads a
process group of its own, so that it and everything it started can be stopped together;
`acp_fsm.system.reaper` stops the groups still running if the agent itself dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

# After SIGTERM, how long the process group has to exit before SIGKILL (the command's own
# time-out, which nobody waits on urgently); also how long the shell's exit is then awaited.
KILL_GRACE_SECONDS = 2.0
# How often the group is checked while it shuts down.
GROUP_POLL_SECONDS = 0.02
# The first look at a signalled group comes this soon; the wait doubles up to the poll period,
# so a group that dies at once (the common case) is seen dead within a millisecond or two.
FIRST_POLL_SECONDS = 0.0005


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to the group; False when no process of it could be signalled."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def proc_stat(pid: int | bytes) -> list[bytes] | None:
    """The fields of `/proc/<pid>/stat` after "pid (comm)": state, ppid, pgrp, ...; None
    when the process is gone (raw reads: a cancel waits on the scans that use this)."""
    name = pid if isinstance(pid, bytes) else str(pid).encode()
    try:
        fd = os.open(b"/proc/" + name + b"/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).rsplit(b")", 1)[-1].split()
    except OSError:
        return None
    finally:
        os.close(fd)


def _live_member_in_proc(pgid: int) -> bool:
    """Scan /proc for a non-zombie process in group `pgid`.

    An orphaned child that died stays a zombie, and still counts for killpg, until init reaps
    it; a container whose init never reaps would otherwise look busy forever.
    """
    for name in os.listdir(b"/proc"):
        if not name.isdigit():
            continue
        try:  # getpgid first: a system call, where reading every stat file took a millisecond
            if os.getpgid(int(name)) != pgid:
                continue
        except OSError:
            continue  # gone meanwhile
        fields = proc_stat(name)
        if fields and fields[0] not in (b"Z", b"X"):
            return True
    return False


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process belongs to process group `pgid`."""
    if not signal_group(pgid, 0):
        return False
    return _live_member_in_proc(pgid) if os.path.isdir("/proc") else True


async def settle(future: asyncio.Future[None], seconds: float) -> bool:
    """Wait up to `seconds` for `future` without cancelling it; True when it is done."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(future), seconds)
    return future.done()


async def stop_group(
    pgid: int,
    exited: asyncio.Future[None],
    *,
    grace: float = KILL_GRACE_SECONDS,
    reap: float = KILL_GRACE_SECONDS,
) -> None:
    """SIGTERM the command's process group, SIGKILL what is left after `grace` seconds, and
    wait (at most `reap` seconds) until the shell, which leads the group, has exited."""
    if signal_group(pgid, signal.SIGTERM):  # a group of zombies only is seen dead below
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        delay = FIRST_POLL_SECONDS
        while (left := deadline - loop.time()) > 0:
            if exited.done():
                if not group_alive(pgid):
                    break
                await asyncio.sleep(min(delay, left))  # polled: exits of other processes
            else:
                await settle(exited, min(delay, left))  # wakes as soon as the shell exits
            delay = min(delay * 2, GROUP_POLL_SECONDS)
        signal_group(pgid, signal.SIGKILL)  # a no-op when everything already exited
    await settle(exited, reap)
