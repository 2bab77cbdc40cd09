"""A shell command as a local child process, for when the editor offers no terminal.

The child runs in its own session (so its own process group), without the provider keys and
acp-fsm's own variables in its environment (`acp_fsm.redact`), reads /dev/null and writes
stdout and stderr to one pipe of its own: it can never touch the agent's protocol stdout
and the shell and everything it started can be stopped together. When the shell
exits, children it left in the background are stopped too, so no call leaks processes; and
`acp_fsm.tools.reaper` kills the group if the agent itself dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import structlog

from acp_fsm import redact
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.redact import command_environment
from acp_fsm.tools.common import ToolError, describe_os_error
from acp_fsm.tools.reaper import REAPER

log = structlog.get_logger("acp.tools")

# Output kept for the model: the first HEAD and the last TAIL bytes; the middle is counted.
OUTPUT_HEAD_BYTES = 16 * 1024
OUTPUT_TAIL_BYTES = 48 * 1024
# After SIGTERM, how long the process group has to exit before SIGKILL (the command's own
# time-out, which nobody waits on urgently); also how long the shell's exit is then awaited.
KILL_GRACE_SECONDS = 2.0
# The same on a cancel, whose answer waits for it: a command that ignores SIGTERM must not
# delay the `cancelled` answer to the prompt (ACP session/cancel).
CANCEL_KILL_GRACE_SECONDS = 0.2
# On a cancel, how long the SIGKILLed shell's exit is awaited before the call returns; the event
# loop's child watcher reaps it in the background when it takes longer.
CANCEL_REAP_SECONDS = 0.3
# How often the group is checked while it shuts down.
GROUP_POLL_SECONDS = 0.02
# The first look at a signalled group comes this soon; the wait doubles up to the poll period,
# so a group that dies at once (the common case) is seen dead within a millisecond or two.
FIRST_POLL_SECONDS = 0.0005
# After the shell exits, how long output still in flight (or held by children) is awaited.
PIPE_DRAIN_SECONDS = 0.5
# A UTF-8 character is at most 4 bytes: at most 3 continuation bytes start a cut tail.
_MAX_CONTINUATION_BYTES = 3


class OutputCapture:
    """Keeps the first `head` and last `tail` bytes of a stream and counts the bytes between."""

    def __init__(self, head: int = OUTPUT_HEAD_BYTES, tail: int = OUTPUT_TAIL_BYTES) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def __repr__(self) -> str:
        return f"<OutputCapture kept={len(self._head) + len(self._tail)} dropped={self.dropped}>"

    def feed(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def text(self, *, cut_before: bool = False) -> str:
        """The kept output as text, with a marker where bytes were dropped, secrets scrubbed
        (none left in pieces where the middle was dropped). `cut_before`: the stream itself
        began mid-way (an editor kept only its end)."""
        secrets = redact.configured()
        if not self.dropped:
            whole = secrets.scrub_text((self._head + self._tail).decode("utf-8", "replace"))
            return secrets.trim(whole, start=cut_before)
        tail = bytes(self._tail)
        start = 0
        while start < min(len(tail), _MAX_CONTINUATION_BYTES) and tail[start] & 0xC0 == 0x80:
            start += 1  # do not show half a character where the cut fell
        head = secrets.trim(secrets.scrub_text(self._head.decode("utf-8", "ignore")),
                            start=cut_before, end=True)
        return (
            head
            + f"\n[... {self.dropped:,} bytes of output omitted: showing the first "
            f"{self._head_limit:,} and the last {self._tail_limit:,} bytes ...]\n"
            + secrets.trim(secrets.scrub_text(tail[start:].decode("utf-8", "replace")),
                           start=True)
        )


@dataclass(frozen=True, slots=True)
class LocalResult:
    """How a local command ended. `returncode` is negative (-signal) when a signal killed it."""

    returncode: int | None
    timed_out: bool
    output: str
    stopped_background: bool


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


class _CommandProtocol(asyncio.SubprocessProtocol):
    """Feeds the child's output to a capture and signals exit and end of output separately.

    (On Python 3.11 `Process.wait()` also waits for the pipes to close, which a background
    child can hold open for as long as it runs; the exit itself is what decides here.)
    """

    def __init__(self, capture: OutputCapture) -> None:
        loop = asyncio.get_running_loop()
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.capture.feed(data if isinstance(data, bytes) else data.encode("utf-8"))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _settle(future: asyncio.Future[None], seconds: float) -> bool:
    """Wait up to `seconds` for `future` without cancelling it; True when it is done."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(future), seconds)
    return future.done()


async def stop_group(pgid: int, exited: asyncio.Future[None], *,
                     grace: float = KILL_GRACE_SECONDS, reap: float = KILL_GRACE_SECONDS) -> None:
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
                await _settle(exited, min(delay, left))  # wakes as soon as the shell exits
            delay = min(delay * 2, GROUP_POLL_SECONDS)
        signal_group(pgid, signal.SIGKILL)  # a no-op when everything already exited
    await _settle(exited, reap)


async def run_local(command: str, cwd: Path, seconds: float,
                    token: CancellationToken) -> LocalResult:
    """Run `sh -c command` in `cwd`; stop it after `seconds` or when `token` fires.

    Raises `Cancelled` when the token fired, after the group was stopped (SIGKILL follows
    SIGTERM after `CANCEL_KILL_GRACE_SECONDS`), and `ToolError` when the shell could not be
    started.
    """
    capture = OutputCapture()
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _CommandProtocol(capture), "sh", "-c", command, cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env=command_environment(),
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command
        reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        raise ToolError(f"Could not start the command: {reason}") from exc
    pgid = transport.get_pid()  # the shell leads its own group (start_new_session)
    REAPER.started(pgid)
    log.debug("command_started", pgid=pgid)
    timed_out = False
    stopped_background = False
    quick = True  # until the wait ends normally: a cancel must be answered at once
    try:
        try:
            await token.race(asyncio.wait_for(asyncio.shield(protocol.exited), seconds))
        except TimeoutError:
            timed_out = True
        else:
            await _settle(protocol.output_closed, PIPE_DRAIN_SECONDS)
            stopped_background = group_alive(pgid)
        quick = False
    finally:
        try:
            if quick:  # nobody reads the output: no drain
                await stop_group(pgid, protocol.exited, grace=CANCEL_KILL_GRACE_SECONDS,
                                 reap=CANCEL_REAP_SECONDS)
            else:
                await stop_group(pgid, protocol.exited)
            REAPER.stopped(pgid)  # SIGKILLed: not when the stop itself was interrupted
            if not quick:
                # Only a process that left the group (e.g. with setsid) can hold the pipe now.
                await _settle(protocol.output_closed, PIPE_DRAIN_SECONDS)
        finally:
            transport.close()
    return LocalResult(transport.get_returncode(), timed_out, capture.text(), stopped_background)
