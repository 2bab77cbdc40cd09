"""A background job run locally, under a keeper (`acp_fsm.tools.process`'s rules): running as
long as any process it started does, its unread output bounded."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import structlog

from acp_fsm import redact
from acp_fsm.blocking import run_blocking
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.system.groups import settle
from acp_fsm.system.keeper import STOP_GRACE_SECONDS
from acp_fsm.system.kept import STOP_MARGIN_SECONDS, Kept, commands_below
from acp_fsm.tools.job import READ_BYTES, UNREAD_BYTES, Job, Read
from acp_fsm.tools.process import ShellProtocol, return_code, start_shell

log = structlog.get_logger("acp.tools")

# After a job ends, how long output still in the pipe is awaited by a read.
PIPE_DRAIN_SECONDS = 0.5


class _Unread:
    """Output not read yet, bounded (the oldest bytes go first), as UTF-8 text on demand."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = 0
        self.changed = asyncio.Event()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - UNREAD_BYTES
        if excess > 0:
            del self.data[:excess]
            self.dropped += excess
        self.changed.set()

    def take(self) -> tuple[str, int]:
        data, dropped = bytes(self.data), self.dropped
        cut = _complete_utf8(data)  # a character split by the pipe waits for its rest
        self.data = bytearray(data[cut:])
        self.dropped = 0
        self.changed.clear()
        data = data[:cut]
        if len(data) > READ_BYTES:
            dropped += len(data) - READ_BYTES
            data = data[-READ_BYTES:]
        return redact.configured().scrub_text(data.decode("utf-8", "replace")), dropped


def _complete_utf8(data: bytes) -> int:
    """The length of `data` without a UTF-8 character cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last character
            needed = (
                1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            )
            return len(data) - back if needed > back else len(data)
    return len(data)


def exit_status(code: int) -> str:
    """`exit code 3`, or `killed by signal 9` for asyncio's -9."""
    return f"exit code {code}" if code >= 0 else f"killed by signal {-code}"


class LocalJob(Job):
    """A command under a keeper: running while any process below the keeper does."""

    def __init__(
        self,
        job_id: str,
        command: str,
        transport: asyncio.SubprocessTransport,
        protocol: ShellProtocol,
        kept: Kept,
        unread: _Unread,
    ) -> None:
        super().__init__(job_id, command)
        self._transport = transport
        self._protocol = protocol
        self._unread = unread
        self._kept = kept
        self.pid = transport.get_pid()  # the keeper's
        self._killed = False
        self._closing = asyncio.ensure_future(self._close_when_done())

    async def _close_when_done(self) -> None:
        """Once the keeper has exited (nothing it kept runs) and the output is in, the pipes
        are closed."""
        await asyncio.shield(self._protocol.exited)
        await settle(self._protocol.output_closed, PIPE_DRAIN_SECONDS)
        self._transport.close()

    @classmethod
    async def start(
        cls, job_id: str, command: str, cwd: Path, token: CancellationToken
    ) -> LocalJob:
        unread = _Unread()
        transport, protocol, kept = await start_shell(
            command, cwd, lambda: ShellProtocol(unread.feed, unread.changed.set), token
        )
        log.info(
            "background_started",
            job=job_id,
            keeper=transport.get_pid(),
            shell=kept.started.result(),
        )
        kept.exited.add_done_callback(lambda _: unread.changed.set())  # a read may say so
        return cls(job_id, command, transport, protocol, kept, unread)

    @property
    def ended(self) -> str | None:
        if not self._protocol.exited.done():
            return None
        if self._killed:
            return "killed"
        code = return_code(self._kept)
        if code is not None:
            return exit_status(code)
        keeper = self._transport.get_returncode()  # ended before the shell: from outside
        how = "ended" if keeper is None else exit_status(keeper)
        return (
            f"lost its keeper ({how}) while it ran: what it started may still be running, "
            "out of the agent's reach"
        )

    @property
    def shell(self) -> str | None:
        """How the job's shell ended, once it did."""
        code = self._kept.exited.result() if self._kept.exited.done() else None
        return None if code is None else exit_status(code)

    def status(self) -> str:
        if self.ended is None and self.shell is not None:
            return f"running (its shell ended, {self.shell}; processes it started still run)"
        return super().status()

    async def wait_exit(self, seconds: float, token: CancellationToken) -> None:
        """Wait up to `seconds` for the job to end (its first output comes meanwhile)."""
        with contextlib.suppress(TimeoutError):
            await token.race(asyncio.wait_for(asyncio.shield(self._protocol.exited), seconds))

    async def read(self, wait_s: float, token: CancellationToken) -> Read:
        unread = self._unread
        if wait_s > 0 and not unread.data and self.ended is None:
            with contextlib.suppress(TimeoutError):
                await token.race(asyncio.wait_for(unread.changed.wait(), wait_s))
        still: list[str] = []
        if self.ended is None and self.shell is not None:
            still = await run_blocking(token, commands_below, self.pid)
            if not still:  # nothing left below the keeper: it is exiting
                await settle(self._protocol.exited, STOP_MARGIN_SECONDS)
        if self.ended is not None:  # output still in the pipe when the keeper exited
            await settle(self._protocol.output_closed, PIPE_DRAIN_SECONDS)
        text, dropped = unread.take()
        if self.ended is not None:
            return Read(text, dropped, self.ended)
        secrets = redact.configured()
        return Read(text, dropped, None, self.shell, tuple(map(secrets.scrub_text, still)))

    async def kill(self) -> None:
        """Stop everything the job started; nothing at all once it ended (its numbers may
        belong to other processes by now)."""
        if self.ended is not None:
            return
        self._killed = True
        self._kept.stop(STOP_GRACE_SECONDS)
        await settle(self._protocol.exited, STOP_GRACE_SECONDS + STOP_MARGIN_SECONDS)
