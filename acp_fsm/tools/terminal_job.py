"""A background job in the editor's terminal (ACP `terminal/*`), released when it is stopped."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import structlog

from acp_fsm import redact
from acp_fsm.client import ClientCallError
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.tools.job import READ_BYTES, Job, Read

if TYPE_CHECKING:
    from acp_fsm.tools.base import ClientBridge

log = structlog.get_logger("acp.tools")

# How often an editor's terminal is asked for new output while a read waits.
TERMINAL_POLL_S = 0.25
# Bound on each request that stops an editor's terminal.
TERMINAL_STOP_S = 5.0
# How long an editor's terminal has to report the exit of a command it was told to kill
# (Toad answers terminal/kill and leaves the command running).
KILL_CONFIRM_S = 2.0


class TerminalJob(Job):
    """A command in the editor's terminal (ACP terminal/*), released when it is stopped."""

    def __init__(self, job_id: str, command: str, client: ClientBridge, terminal_id: str) -> None:
        super().__init__(job_id, command)
        self.client = client
        self.terminal_id = terminal_id
        self._seen = ""
        self._status: str | None = None
        self._final: tuple[str, bool] | None = None  # the output kept at release
        self._released = False

    @property
    def ended(self) -> str | None:
        return self._status

    async def _output(self) -> tuple[str, bool]:
        if self._final is not None:
            return self._final
        result = await self.client.terminal_output(self.terminal_id)
        status = result.get("exitStatus")
        if isinstance(status, dict) and self._status is None:
            code, sig = status.get("exitCode"), status.get("signal")
            self._status = (
                f"exit code {code}" if code is not None else f"killed by {sig or 'a signal'}"
            )
        return str(result.get("output") or ""), bool(result.get("truncated"))

    async def read(self, wait_s: float, token: CancellationToken) -> Read:
        deadline = time.monotonic() + wait_s
        while True:
            output, truncated = await token.race(self._output())
            fresh = output[len(self._seen) :] if output.startswith(self._seen) else output
            lost = not output.startswith(self._seen) or (truncated and not self._seen)
            if fresh or self._status is not None or time.monotonic() >= deadline:
                break
            await token.race(asyncio.sleep(min(TERMINAL_POLL_S, deadline - time.monotonic())))
        self._seen = output
        data = fresh.encode("utf-8")
        dropped = max(0, len(data) - READ_BYTES)
        text = redact.configured().scrub_text(data[-READ_BYTES:].decode("utf-8", "replace"))
        if lost and text:
            text = "[The editor kept only the end of the output.]\n" + text
        return Read(text, dropped, self._status)

    async def kill(self) -> None:
        """`terminal/kill`, then its exit confirmed (within `KILL_CONFIRM_S`) before the job
        counts as killed and its terminal is released. A command the kill left running stays
        a running job, its terminal kept: it can be read, and killed again."""
        if self._released:
            return
        if self._status is None and await self._kill_sent():
            try:
                if await self._exits_within(KILL_CONFIRM_S):
                    self._status = self._status or "killed"
            except Exception as exc:
                log.warning("background_terminal_stop_failed", job=self.id, error=str(exc))
        if self._status is None:
            log.warning("background_terminal_survived_kill", job=self.id)
            return
        await self._release()

    async def stop(self) -> None:
        """Kill and release at once, unconfirmed: the session ends, and the editor's release
        (which ACP says kills a command still running) is all there is left to do."""
        if self._released:
            return
        if self._status is None:
            await self._kill_sent()
        await self._release()

    async def _kill_sent(self) -> bool:
        """`terminal/kill` (bounded); whether the editor answered it."""
        try:
            await asyncio.wait_for(self.client.kill_terminal(self.terminal_id), TERMINAL_STOP_S)
        except Exception as exc:
            log.warning("background_terminal_stop_failed", job=self.id, error=str(exc))
            return False
        return True

    async def _exits_within(self, seconds: float) -> bool:
        """Whether the command has exited: `terminal/wait_for_exit` within `seconds`, else the
        exit status of one more `terminal/output` (an editor whose wait failed)."""
        try:
            await asyncio.wait_for(self.client.wait_for_terminal_exit(self.terminal_id), seconds)
            return True
        except (TimeoutError, ClientCallError):
            await asyncio.wait_for(self._output(), TERMINAL_STOP_S)
            return self._status is not None

    async def _release(self) -> None:
        """Keep the last output, then release the terminal (once)."""
        if self._released:
            return
        try:
            self._final = await asyncio.wait_for(self._output(), TERMINAL_STOP_S)
        except Exception as exc:
            log.warning("background_terminal_stop_failed", job=self.id, error=str(exc))
        finally:
            self._released = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    self.client.release_terminal(self.terminal_id), TERMINAL_STOP_S
                )
