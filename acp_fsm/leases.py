"""Which process runs a session's turn, and whether it still lives.

Editors do open one session in two agent processes (avante starts two agents that load the
same session; two windows on one project do it too). Only one of them may run a turn, and the
other must not repair a transcript the running turn is still writing. So a process running a
turn holds a lease on the session in the store (`Store.claim_turn`): its identity and a
heartbeat. Another process reads it to decide: refuse a prompt while the owner lives, repair
and take over once it is gone. See docs/sessions.md.

An owner is `host:pid:start:purpose-nonce`: the process (its start time in clock ticks since
boot, field 22 of /proc/<pid>/stat, so a pid reused by an unrelated process is not mistaken
for it), what it holds the lease for (a `turn`, or the `repair` of a load), and a nonce per
claim, so one holder never releases another's lease. On the same host an owner is alive
exactly while its process runs, whatever its heartbeat (a store stalled for a minute must not
hand a running turn to another process); a lease a live process failed to release is released
again until it is (`session.lease.release_soon`). Across hosts, and where /proc is missing, an
owner is alive while its heartbeat is younger than `STALE_S`.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from functools import cache

# How often a running turn renews its lease, and when a lease not renewed counts as orphaned
# (only where liveness cannot be checked directly).
HEARTBEAT_S = 5.0
STALE_S = 30.0


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    return True


def _start_ticks(pid: int) -> str | None:
    """The start time of process `pid`; None when no such live process runs; "?" when it
    runs but its start time cannot be read (no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return "?" if not os.path.isdir("/proc") and _exists(pid) else None
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has finished
        return None
    return fields[19]


@cache
def this_process() -> str:
    """This process, as the first part of a lease owner."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid) or '?'}"


TURN = "turn"
REPAIR = "repair"  # held for the moment a load repairs what a crashed turn left


def new_owner(purpose: str = TURN) -> str:
    """An owner for one claim by this process."""
    return f"{this_process()}:{purpose}-{secrets.token_hex(4)}"


def purpose(owner: str) -> str:
    return owner.rsplit(":", 1)[-1].split("-", 1)[0]


def owner_pid(owner: str) -> int | None:
    try:
        return int(owner.split(":")[-3])
    except (IndexError, ValueError):
        return None


def owner_alive(owner: str, heartbeat_at: float, now: float | None = None) -> bool:
    """Whether the owner of a lease (as `new_owner` wrote it) still holds it."""
    fresh = (time.time() if now is None else now) - heartbeat_at < STALE_S
    host, pid, start = [*owner.rsplit(":", 3), "", "", ""][:3]
    if host != socket.gethostname() or not pid.isdigit():
        return fresh
    ticks = _start_ticks(int(pid))
    if ticks is None:
        return False  # the process is gone
    if "?" in (ticks, start):
        return fresh  # no start time to compare: the pid may be reused
    return ticks == start
