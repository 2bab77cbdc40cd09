"""The caller's side of a keeper (`acp_fsm.system.keeper`): a command started under one, told
when its leader exits, and stopped whole through it.

The caller never signals the command itself: the keeper does, and only processes below it, so
a command that ended is never signalled again (its numbers may belong to anyone by then). The
socket to the keeper is the command's lifeline: when it closes, because the caller closed it
or died, even by `kill -9`, the keeper kills everything below it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from acp_fsm.system import keeper

T = TypeVar("T")

KEEPER_SCRIPT = Path(keeper.__file__)
# Beyond the grace of a stop, how long the keeper's exit is awaited (its last SIGKILLs and
# their reaping take milliseconds).
STOP_MARGIN_SECONDS = 1.0


class Kept(asyncio.Protocol):
    """The lines a keeper says (`started`, `error`, `exit`, `stopped`) and the way to stop
    it. The keeper exits when nothing below it is left, with the leader's status."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.started: asyncio.Future[int] = loop.create_future()  # the leader's pid
        # The leader's return code (-N: signal N); None when the keeper ended without one.
        self.exited: asyncio.Future[int | None] = loop.create_future()
        self.stopped = 0  # processes the keeper signalled when asked to stop
        self._transport: asyncio.Transport | None = None
        self._pending = b""

    def __repr__(self) -> str:
        ok = self.started.done() and self.started.exception() is None
        leader = self.started.result() if ok else None
        state = f"exited {self.exited.result()}" if self.exited.done() else "running"
        return f"<Kept leader={leader} {state}>"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            word, _, value = line.decode("ascii", "replace").partition(" ")
            if not value.lstrip("-").isdigit():
                continue
            number = int(value)
            if word == "started" and not self.started.done():
                self.started.set_result(number)
            elif word == "error" and not self.started.done():
                self.started.set_exception(OSError(number, os.strerror(number)))
            elif word == "exit" and not self.exited.done():
                self.exited.set_result(number)
            elif word == "stopped":
                self.stopped += number

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.started.done():
            self.started.set_exception(OSError("the command's keeper ended before starting it"))
        if not self.exited.done():
            self.exited.set_result(None)

    def stop(self, grace: float) -> None:
        """Ask the keeper to stop everything below it: SIGTERM, then SIGKILL after `grace`
        seconds (at once when 0). Nothing to do once it is gone."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(f"stop {grace}\n".encode())

    def close(self) -> None:
        """Drop the lifeline: the keeper kills whatever is left below it at once."""
        if self._transport is not None:
            self._transport.close()


async def spawn_kept(
    spawn: Callable[..., Awaitable[T]],
    argv: Sequence[str],
    discard: Callable[[T], object],
    *,
    ends_with_leader: bool = False,
    until: Callable[[asyncio.Future[int]], Awaitable[int]] = asyncio.shield,
    **options: Any,
) -> tuple[T, Kept]:
    """Start `argv` under a keeper: `spawn` (`asyncio.create_subprocess_exec`, or a
    `loop.subprocess_exec` with its protocol bound) is called with the keeper's command line
    and `options`, and what it returns comes back with the keeper's handle once the leader
    runs. The keeper inherits the pipes `options` give and hands them to the leader; it runs
    in a session of its own. `ends_with_leader`: what the leader leaves is killed when it
    exits (else the keeper lasts as long as any process below it).

    The leader's start is awaited through `until` (a cancellation token's race, say): when
    that raises, the keeper is told to give up (it never starts the leader, or kills it at
    once) and nobody waits for it to. `OSError` when the leader could not start. Either way
    `discard` is given what `spawn` returned, to close it."""
    ours, theirs = socket.socketpair()
    mode = "leader" if ends_with_leader else "tree"
    try:
        started = await spawn(
            *(sys.executable, "-I", "-S", str(KEEPER_SCRIPT), str(theirs.fileno()), mode),
            *argv,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
            **options,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    kept = Kept()
    try:
        await asyncio.get_running_loop().create_unix_connection(lambda: kept, sock=ours)
        await until(kept.started)
    except BaseException:
        kept.close()
        ours.close()
        discard(started)
        # Nobody awaits the start any more: that it fails now, as the keeper gives up, is
        # expected, not an error for asyncio to log ("exception was never retrieved").
        kept.started.add_done_callback(_seen)
        raise
    return started, kept


def _seen(future: asyncio.Future[int]) -> None:
    if not future.cancelled():
        future.exception()


# Characters of a command line shown for a process still running.
COMMAND_LINE_CHARS = 80


def commands_below(keeper_pid: int) -> list[str]:
    """`PID `command line`` of each process below a keeper, parents first (a blocking walk
    of /proc; empty without it)."""
    return [f"{pid} `{command_line(pid)}`" for pid in keeper.descendants(keeper_pid)]


def command_line(pid: int) -> str:
    """The command line of `pid`, cut to `COMMAND_LINE_CHARS` ("?" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4 * COMMAND_LINE_CHARS)
    except OSError:
        return "?"
    words = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return words if len(words) <= COMMAND_LINE_CHARS else words[: COMMAND_LINE_CHARS - 1] + "…"
