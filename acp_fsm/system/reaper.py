"""The agent's own helpers do not outlive it, even when it is killed with `kill -9`.

The tools' workers (a search's, a fetched page's) and each local MCP server run in a process
group of their own, which the agent stops when it is done with them or exits in order. A killed
agent can do none of that, and a parent-death signal (`PR_SET_PDEATHSIG`) would reach only the
child, not what the child started. So the first such helper also starts a watcher: a tiny
Python process in a session of its own that reads the agent's `+pgid` / `-pgid` lines from a
pipe and, when the pipe closes (the agent is gone, however it went), kills every group still
registered. It ignores the signals a terminal or an editor sends to the agent's group, so it is
still there to do that. (Commands have a keeper each instead, `acp_fsm.system.keeper`, which
also stops what leaves the group.) See docs/shutdown.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import structlog

log = structlog.get_logger("acp.tools")

# The watcher's whole program (stdlib only; run with -I -S so it starts in milliseconds).
WATCHER_SOURCE = """\
import os, signal, sys
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        pgid = int(line[1:])
    except ValueError:
        continue
    if line[:1] == b"+":
        groups.add(pgid)
    else:
        groups.discard(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class Reaper:
    """The agent's side of the watcher: registers process groups as they start and stop."""

    def __init__(self) -> None:
        self._pipe: int | None = None
        self._pid: int | None = None
        self._groups: set[int] = set()  # registered and not stopped: a new watcher learns them
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Reaper watcher={self._pid} groups={len(self._groups)}>"

    def started(self, pgid: int) -> None:
        """A process group that must die with the agent."""
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+{pgid}\n")

    def stopped(self, pgid: int) -> None:
        """A group the agent has stopped itself (its number may be reused later). Only call
        it once the group is dead: a group still registered is killed when the agent dies."""
        with self._lock:
            self._groups.discard(pgid)
            self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        if self._pipe is None and not self._start():
            return
        assert self._pipe is not None
        try:
            os.write(self._pipe, line.encode())
        except BlockingIOError:  # the watcher is stuck: a stale "+" only risks a late kill
            log.warning("reaper_busy", line=line.strip())
        except OSError as exc:  # the watcher died: a new one learns every live group
            log.warning("reaper_lost", error=str(exc))
            os.close(self._pipe)
            self._pipe = None
            self._reap()
            self._start()

    def _start(self) -> bool:
        read_end, write_end = os.pipe()  # both close-on-exec: no command inherits them
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            self._pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", "-c", WATCHER_SOURCE],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_end, 0),
                    (os.POSIX_SPAWN_DUP2, null, 1),
                    (os.POSIX_SPAWN_DUP2, null, 2),
                ],
                setsid=True,
            )
        except OSError as exc:
            log.warning("reaper_not_started", error=str(exc))
            os.close(write_end)
            return False
        finally:
            os.close(read_end)
            os.close(null)
        os.set_blocking(write_end, False)  # a stuck watcher must not stall the agent
        self._pipe = write_end
        known = "".join(f"+{pgid}\n" for pgid in self._groups)  # what a lost one knew
        if known:
            os.write(write_end, known.encode())
        return True

    def _reap(self) -> None:
        """Collect a dead watcher's exit status, so it does not stay a zombie."""
        if self._pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, os.WNOHANG)
            self._pid = None


REAPER = Reaper()
