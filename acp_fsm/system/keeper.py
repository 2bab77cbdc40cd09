"""A command's keeper: the small process every command of the agent (and every agent the
conformance tool tests) runs under, so that nothing the command starts outlives its stop.

Run as a script, `python -I -S keeper.py FD MODE COMMAND...` (the standard library only, so it
starts in milliseconds; in a session of its own), it:

- makes itself the child subreaper (Linux, `PR_SET_CHILD_SUBREAPER`): a process the command
  leaves behind, even one that left its process group (`setsid`, a daemon's double fork), is
  re-parented to the keeper instead of to init, so it stays below the keeper and in reach;
- starts COMMAND (the leader) in a process group of its own and says `started PID` on the
  socket FD (`error ERRNO` when it cannot start), then `exit STATUS` when the leader exits
  (STATUS as asyncio reports it: the exit code, or -N for signal N);
- exits once no process below it is left, with the leader's status (dying of the leader's
  signal when a signal ended it).

It stops them all (SIGTERM; SIGKILL for what is left `GRACE` seconds later) when the agent
writes `stop GRACE` (it answers `stopped N`, the number of processes it signalled), when it is
sent SIGTERM, SIGINT or SIGHUP (with `STOP_GRACE_SECONDS`), and at once with SIGKILL when FD
closes: the agent is gone, however it went, `kill -9` included. With MODE `leader` (the
conformance tool's agents), what is left when the leader exits is killed then.

It signals only processes it finds below itself in /proc at that moment (and the leader's
group while the leader is not yet reaped, so its number is still the group's): never a number
that may have been reused. Where a process cannot be adopted (no subreaper: macOS, the BSDs)
the keeper cannot see what the leader left once it exits, so it kills the leader's group then,
as in MODE `leader`; a process that left that group and outlived its parent survives there.
See docs/shutdown.md.
"""

from __future__ import annotations

import os
import select
import sys
import time

# The keeper starts before every command, so every command waits for what it imports:
# `signal` imports enum, functools and collections, and `contextlib` and `typing` more of the
# same, a third of the keeper's start in all. The C module under `signal` has all the keeper
# uses (its constants are plain numbers); errors are let pass with try/except (ruff's SIM105
# is off for this file); `TYPE_CHECKING` is the constant mypy reads, without `typing`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:
    try:
        import _signal as signal
    except ImportError:  # an interpreter other than CPython
        import signal

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
# After SIGTERM, how long the command has to exit before SIGKILL when nobody says otherwise.
STOP_GRACE_SECONDS = 2.0
# How often the keeper looks again while it stops the command (for the deadline, and for
# processes forked meanwhile).
STOP_POLL_SECONDS = 0.02
# The signals that ask the keeper to stop; reset to their defaults for the leader.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
RESET_FOR_LEADER = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
ASKED: list[int] = []  # stop signals received, not acted on yet


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


def descendants(root: int) -> list[int]:
    """The live (not zombie) processes below `root`, parents before their children; empty
    without /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(b"/proc")
    except OSError:
        names = []
    for name in names:
        fields = proc_stat(name) if name.isdigit() else None
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found = children.get(root, [])
    for pid in found:  # grows while it is walked: breadth first
        found += children.get(pid, [])
    return found


def adopt_orphans() -> bool:
    """Become the child subreaper; False where that (or /proc, to find the adopted) is
    missing."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError):
        return False


class Keeper:
    """The keeper's loop: reap, listen to the agent, stop the tree when asked."""

    def __init__(self, control: int, leader: int, wake: int, *, ends_with_leader: bool) -> None:
        self.control: int | None = control  # None once the agent's end closed
        self.leader: int | None = leader  # None once reaped: its number is no longer ours
        self.wake = wake  # a byte comes when a signal does (`listen_for_signals`)
        self.ends_with_leader = ends_with_leader
        self.status: int | None = None  # the leader's, once it exited
        self.deadline: float | None = None  # stopping: SIGKILL from then on
        self._pending = b""

    def send(self, line: str) -> None:
        if self.control is not None:
            try:
                os.write(self.control, line.encode() + b"\n")
            except OSError:  # the agent is gone: the EOF says so
                pass

    def run(self) -> int | None:
        """Keep the tree until nothing below the keeper is left; the leader's status."""
        while self.reap():
            if ASKED:
                ASKED.clear()
                self.stop(STOP_GRACE_SECONDS)
            wait = None  # until a child exits, a signal or the agent says something
            if self.deadline is not None:
                wait = self.deadline - time.monotonic()
                if wait <= 0:  # again each round: what was forked meanwhile
                    self.signal_all(signal.SIGKILL)
                wait = min(STOP_POLL_SECONDS, wait) if wait > 0 else STOP_POLL_SECONDS
            watched = [self.wake] if self.control is None else [self.wake, self.control]
            ready, _, _ = select.select(watched, [], [], wait)
            if self.wake in ready:
                os.read(self.wake, 4096)
            if self.control in ready:
                self.listen()
        return self.status

    def reap(self) -> bool:
        """Collect the children that exited; False when no child is left."""
        while True:
            try:  # looked at before it is reaped: the leader's group is killed while its
                # zombie still holds the group's number
                child = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return False
            if child is None:
                return True
            if child.si_pid == self.leader and self.ends_with_leader:
                self.signal_all(signal.SIGKILL)
                self.deadline = time.monotonic()
            _, wait_status = os.waitpid(child.si_pid, 0)
            if child.si_pid == self.leader:
                self.leader = None
                self.status = os.waitstatus_to_exitcode(wait_status)
                self.send(f"exit {self.status}")

    def listen(self) -> None:
        assert self.control is not None
        try:
            data = os.read(self.control, 4096)
        except OSError:
            data = b""
        if not data:  # the agent is gone
            os.close(self.control)
            self.control = None
            self.stop(0)
            return
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            word, _, grace = line.partition(b" ")
            if word == b"stop":
                try:
                    seconds = max(0.0, float(grace))
                except ValueError:
                    seconds = STOP_GRACE_SECONDS
                self.send(f"stopped {self.stop(seconds)}")

    def stop(self, grace: float) -> int:
        """Start stopping the tree (SIGKILL at once without grace); the processes signalled
        (none when it was stopping already)."""
        deadline = time.monotonic() + grace
        if self.deadline is not None:
            self.deadline = min(self.deadline, deadline)
            return 0
        self.deadline = deadline
        return self.signal_all(signal.SIGTERM if grace > 0 else signal.SIGKILL)

    def signal_all(self, number: int) -> int:
        """Send `number` to the leader's group (while the leader is unreaped) and to every
        process below the keeper; how many were found below it."""
        if self.leader is not None:
            _signal_quietly(os.killpg, self.leader, number)
        below = descendants(os.getpid())
        for pid in below:  # each found below the keeper a moment ago (a reuse needs a wrap)
            _signal_quietly(os.kill, pid, number)
        return len(below)


def _signal_quietly(send: Callable[[int, int], None], target: int, number: int) -> None:
    """`send(target, number)`, whatever became of `target` meanwhile."""
    try:
        send(target, number)
    except OSError:
        pass


def exit_as(status: int | None) -> None:
    """End the keeper the way the leader ended: its exit code, or its signal (no core)."""
    if status is not None and status < 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, OSError, ValueError):
            pass
        try:
            signal.signal(-status, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            pass
        os.kill(os.getpid(), -status)
        status = 128 - status  # a signal that did not end the keeper
    os._exit(1 if status is None else status)


def listen_for_signals() -> int:
    """Signals wake the keeper's select (a byte on the returned pipe): a child's exit, and
    a stop asked by signal (kept in `ASKED`)."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    for number in STOP_SIGNALS:
        signal.signal(number, lambda number, frame: ASKED.append(number))
    return wake_read


def main(argv: list[str]) -> None:
    control, mode, command = int(argv[0]), argv[1], argv[2:]
    os.set_inheritable(control, False)
    adopts = adopt_orphans()
    wake = listen_for_signals()  # before the leader starts: no stop request is missed
    if select.select([control], [], [], 0)[0]:  # given up (a cancel) before it started
        os._exit(0)
    try:
        leader = os.posix_spawnp(
            command[0],
            command,
            os.environ,
            setpgroup=0,
            setsigdef=RESET_FOR_LEADER,
            setsigmask=(),
        )
    except OSError as exc:
        try:
            os.write(control, f"error {exc.errno or 0}\n".encode())
        except OSError:
            pass
        os._exit(127)
    keeper = Keeper(control, leader, wake, ends_with_leader=mode == "leader" or not adopts)
    keeper.send(f"started {leader}")
    null = os.open(os.devnull, os.O_RDWR)  # the command's pipes are the command's alone
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    exit_as(keeper.run())


if __name__ == "__main__":
    main(sys.argv[1:])
