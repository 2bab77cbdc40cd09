"""A shell command as a local child process, for when the editor offers no terminal.

The shell runs under a keeper (`acp_fsm.system.keeper`), in a process group of its own,
without the provider keys and acp-fsm's own variables in its environment (`acp_fsm.redact`),
reading /dev/null and writing stdout and stderr to one pipe of its own: it can never touch the
agent's protocol stdout. When the shell exits, what it left running is stopped too (even a
process that left its group: the keeper adopts it), so no call leaks processes; and the
keeper kills them all if the agent itself dies first.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import structlog

from acp_fsm import redact
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.redact import command_environment
from acp_fsm.system.groups import settle
from acp_fsm.system.keeper import STOP_GRACE_SECONDS
from acp_fsm.system.kept import STOP_MARGIN_SECONDS, Kept, spawn_kept
from acp_fsm.tools.common import ToolError, describe_os_error

log = structlog.get_logger("acp.tools")

# Output kept for the model: the first HEAD and the last TAIL bytes; the middle is counted.
OUTPUT_HEAD_BYTES = 16 * 1024
OUTPUT_TAIL_BYTES = 48 * 1024
# The same on a cancel, whose answer waits for it: a command that ignores SIGTERM must not
# delay the `cancelled` answer to the prompt (ACP session/cancel).
CANCEL_KILL_GRACE_SECONDS = 0.2
# On a cancel, how long the keeper's exit (the command SIGKILLed) is awaited beyond the grace
# before the call returns; it is seen in the background when it takes longer.
CANCEL_REAP_SECONDS = 0.3
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
        head = secrets.trim(
            secrets.scrub_text(self._head.decode("utf-8", "ignore")), start=cut_before, end=True
        )
        return (
            head + f"\n[... {self.dropped:,} bytes of output omitted: showing the first "
            f"{self._head_limit:,} and the last {self._tail_limit:,} bytes ...]\n"
            + secrets.trim(secrets.scrub_text(tail[start:].decode("utf-8", "replace")), start=True)
        )


@dataclass(frozen=True, slots=True)
class LocalResult:
    """How a local command ended. `returncode` is negative (-signal) when a signal killed it."""

    returncode: int | None
    timed_out: bool
    output: str
    stopped_background: bool


class ShellProtocol(asyncio.SubprocessProtocol):
    """Feeds a command's output (stdout and stderr, one pipe) to `feed`, and says when the
    output ends and when the keeper has exited (its transport may be closed then: closing it
    before would kill the keeper, not what runs below it).

    (On Python 3.11 `Process.wait()` also waits for the pipes to close, which a background
    child can hold open for as long as it runs; the exit itself is what decides here.)
    """

    def __init__(self, feed: Callable[[bytes], None], on_exit: Callable[[], None] = lambda: None):
        loop = asyncio.get_running_loop()
        self.feed = feed
        self.on_exit = on_exit
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.feed(data if isinstance(data, bytes) else data.encode("utf-8"))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self.on_exit()


P = TypeVar("P", bound=ShellProtocol)


async def start_shell(
    command: str, cwd: Path, protocol: Callable[[], P], token: CancellationToken
) -> tuple[asyncio.SubprocessTransport, P, Kept]:
    """`sh -c command` in `cwd` under a keeper (it and whatever it starts are stopped
    together, and die with the agent, kill -9 included), its stdout and stderr together to
    `protocol`, no stdin, the commands' environment. `ToolError` when it cannot start;
    `Cancelled` at once when `token` fires while the keeper starts (it then runs nothing)."""
    loop = asyncio.get_running_loop()
    try:
        (transport, started), kept = await spawn_kept(
            functools.partial(loop.subprocess_exec, protocol),
            ("sh", "-c", command),
            lambda spawned: close_on_exit(*spawned),
            until=lambda leader: token.race(asyncio.shield(leader)),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=command_environment(),
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command
        reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        raise ToolError(f"Could not start the command: {reason}") from exc
    return transport, started, kept


def close_on_exit(transport: asyncio.SubprocessTransport, protocol: ShellProtocol) -> None:
    """Close `transport` once its keeper's exit is seen (a keeper still stopping the command
    keeps running meanwhile)."""
    if protocol.exited.done():
        transport.close()
    else:
        protocol.exited.add_done_callback(lambda _: transport.close())


async def run_local(
    command: str,
    cwd: Path,
    seconds: float,
    token: CancellationToken,
    watch: Callable[[bytes], None] | None = None,
) -> LocalResult:
    """Run `sh -c command` in `cwd`; stop it after `seconds` or when `token` fires. `watch`
    is given the output as it is read, too.

    Raises `Cancelled` when the token fired, after the command was stopped (SIGKILL follows
    SIGTERM after `CANCEL_KILL_GRACE_SECONDS`), and `ToolError` when the shell could not be
    started.
    """
    capture = OutputCapture()

    def feed(data: bytes) -> None:
        capture.feed(data)
        if watch is not None:
            watch(data)

    transport, protocol, kept = await start_shell(command, cwd, lambda: ShellProtocol(feed), token)
    log.debug("command_started", keeper=transport.get_pid())
    timed_out = False
    quick = True  # until the wait ends normally: a cancel must be answered at once
    try:
        try:
            await token.race(asyncio.wait_for(asyncio.shield(kept.exited), seconds))
        except TimeoutError:
            timed_out = True
        else:
            await settle(protocol.output_closed, PIPE_DRAIN_SECONDS)
        quick = False
    finally:
        try:
            grace, reap = (
                (CANCEL_KILL_GRACE_SECONDS, CANCEL_REAP_SECONDS)
                if quick  # nobody reads the output: no drain
                else (STOP_GRACE_SECONDS, STOP_MARGIN_SECONDS)
            )
            kept.stop(grace)
            await settle(protocol.exited, grace + reap)
            if not quick:  # only a process that left the shell's group held the pipe so long
                await settle(protocol.output_closed, PIPE_DRAIN_SECONDS)
        finally:
            kept.close()  # the keeper kills at once whatever a stop cut short left
            close_on_exit(transport, protocol)
    left = kept.stopped > 0 and not timed_out  # the shell had exited: the rest was left
    return LocalResult(return_code(kept), timed_out, capture.text(), left)


def return_code(kept: Kept) -> int | None:
    """The shell's return code, as its keeper said it (-N: signal N). None while the shell
    runs, and when the keeper ended without saying it: killed from outside, by hand, while
    the shell ran (the keeper's own exit status is then no news of the shell, which runs on
    out of reach)."""
    return kept.exited.result() if kept.exited.done() else None
