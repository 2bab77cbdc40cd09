"""What every background job is (`tools.background`), and what one read of it returns."""

from __future__ import annotations

import time
from dataclasses import dataclass

from acp_fsm.protocol.cancel import CancellationToken

# Unread output kept per job; older bytes are dropped (and counted) when nobody reads.
UNREAD_BYTES = 1024 * 1024
# Text one read returns at most (its end: the latest output).
READ_BYTES = 32 * 1024
# Processes still running after a job's shell exited that a read names (the rest counted).
SHOWN_PROCESSES = 5


@dataclass
class Read:
    """What one read of a job returns."""

    text: str
    dropped: int  # bytes printed since the last read that are not in `text`
    ended: str | None  # how the job ended ("exit code 0"), None while it runs
    shell: str | None = None  # while it runs: how its shell ended, when it did
    still: tuple[str, ...] = ()  # then: the processes it started that still run

    def running(self) -> str:
        """How a running job stands, after "is running" ("" while its shell runs)."""
        if self.shell is None:
            return ""
        count = len(self.still)
        if not count:
            return f" (its shell ended, {self.shell}; processes it started still run)"
        named = ", ".join(self.still[:SHOWN_PROCESSES])
        if count > SHOWN_PROCESSES:
            named += f", and {count - SHOWN_PROCESSES} more"
        started = "1 process it started is" if count == 1 else f"{count} processes it started are"
        return f" (its shell ended, {self.shell}; {started} still running: {named})"


class Job:
    """A background command: a `LocalJob` or a `TerminalJob`."""

    def __init__(self, job_id: str, command: str) -> None:
        self.id = job_id
        self.command = command
        self.started = time.monotonic()

    @property
    def ended(self) -> str | None:
        raise NotImplementedError

    async def read(self, wait_s: float, token: CancellationToken) -> Read:
        raise NotImplementedError

    async def kill(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop it for good: the session ends."""
        await self.kill()

    def status(self) -> str:
        """How it stands, in a few words."""
        return self.ended or "running"

    def summary(self) -> str:
        """One line for the system prompt."""
        shown = self.command.strip().splitlines()[0][:80] if self.command.strip() else ""
        return f"- {self.id} `{shown}`: {self.status()}"
