"""What every background job is (`tools.background`), what one read of it returns, and a
session's jobs (`BackgroundJobs`, at most `ACP_FSM_MAX_BACKGROUND` running at once)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field

import structlog

from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.tools.common import ToolError, plural

log = structlog.get_logger("acp.tools")

DEFAULT_MAX_BACKGROUND = 8

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


def max_background() -> int:
    """`ACP_FSM_MAX_BACKGROUND` (default 8): jobs that may run at once in a session."""
    raw = os.environ.get("ACP_FSM_MAX_BACKGROUND", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        print(f"acp-fsm: ignoring ACP_FSM_MAX_BACKGROUND={raw!r}", file=sys.stderr)
    return DEFAULT_MAX_BACKGROUND


@dataclass
class BackgroundJobs:
    """A session's background jobs."""

    jobs: dict[str, Job] = field(default_factory=dict)
    _next: int = 1

    def running(self) -> list[Job]:
        return [job for job in self.jobs.values() if job.ended is None]

    def new_id(self) -> str:
        running = self.running()
        if len(running) >= max_background():
            ids = ", ".join(job.id for job in running)
            raise ToolError(
                f"{plural(len(running), 'background command')} already running ({ids}), the "
                "most a session may run at once (ACP_FSM_MAX_BACKGROUND); stop one with "
                "kill_command first."
            )
        job_id = f"bg_{self._next}"
        self._next += 1
        return job_id

    def add(self, job: Job) -> None:
        self.jobs[job.id] = job

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            known = ", ".join(self.jobs) or "none"
            raise ToolError(f"No background command {job_id!r} in this session (known: {known}).")
        return job

    def summary(self) -> str:
        """What the system prompt says of the jobs ("" when there are none)."""
        if not self.jobs:
            return ""
        lines = [job.summary() for job in self.jobs.values()]
        return (
            "Background commands started in this session (read their output with "
            "command_output, stop them with kill_command):\n" + "\n".join(lines)
        )

    async def stop_all(self) -> None:
        """Stop every job still running (the session is closing)."""
        jobs = list(self.jobs.values())
        if jobs:
            log.info("background_stopping", jobs=[job.id for job in jobs])
        await asyncio.gather(*(job.stop() for job in jobs), return_exceptions=True)
