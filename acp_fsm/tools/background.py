"""Commands that keep running after their call: a session's background jobs.

`run_command` with `background: true` starts one (`bg_1`, `bg_2`, ... per session) in the
editor's terminal when it offers one (`terminal_job`: embedded in the starting call, so the
user watches it), else locally under a keeper (`local_job`, `acp_fsm.tools.process`'s rules:
no keys in its environment, its own pipes, dies with the agent, kill -9 included). A local job
runs as long as any process it started does, below its keeper: a shell that exited leaving `&`
children (or daemons) is still a running job, said so. `command_output` reads what it printed
since the last read, waiting up to `wait_ms` for more; `kill_command` stops it, everything it
started with it. A cancel stops a wait, never a job; the session stops every running job when
it closes, is deleted or the agent exits; a job that ended is never signalled again. At most
`ACP_FSM_MAX_BACKGROUND` run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass, field

import structlog

from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import ToolError, ask_client, plural
from acp_fsm.tools.job import UNREAD_BYTES, Job, Read
from acp_fsm.tools.local_job import LocalJob
from acp_fsm.tools.terminal_job import TerminalJob
from acp_fsm.updates import text_block

log = structlog.get_logger("acp.tools")

DEFAULT_MAX_BACKGROUND = 8
# How long `run_command` waits for a job's first output before it answers.
FIRST_OUTPUT_S = 1.0
# The longest `wait_ms` of one read.
MAX_WAIT_MS = 60_000


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


# -- the tools' side ----------------------------------------------------------------------------


def describe(job: Job, read: Read) -> str:
    """What a read tells the model: how the job stands, then the output."""
    state = f"{job.id} {read.ended}" if read.ended else f"{job.id} is running{read.running()}"
    lines = [state + "."]
    if read.dropped:
        lines.append(f"[{read.dropped:,} earlier bytes of output are not shown.]")
    lines.append(read.text if read.text else "(no new output)")
    return "\n".join(lines)


async def start_in_background(command: str, env: ToolEnv) -> ToolOutcome:
    """Start `command` as a job of the session and answer with its id and first output."""
    job_id = env.background.new_id()
    client = env.client
    job: Job
    if client.has_terminal:
        terminal_id = await ask_client(
            env,
            client.create_terminal("sh", ["-c", command], str(env.cwd), UNREAD_BYTES),
            "start a terminal",
        )
        job = TerminalJob(job_id, command, client, terminal_id)
        env.background.add(job)
        env.report(({"type": "terminal", "terminalId": terminal_id},))
        with contextlib.suppress(TimeoutError):
            await env.token.race(
                asyncio.wait_for(client.wait_for_terminal_exit(terminal_id), FIRST_OUTPUT_S)
            )
    else:
        job = await LocalJob.start(job_id, command, env.cwd, env.token)
        env.background.add(job)
        await job.wait_exit(FIRST_OUTPUT_S, env.token)
    read = await job.read(0, env.token)
    started = f"Started in the background as {job_id}; "
    if read.ended:
        text = started + f"it already ended ({read.ended}).\n" + (read.text or "(no output)")
    else:
        text = (
            started
            + f"it is running{read.running()}. Its output in the first second:\n"
            + (read.text or "(no output yet)")
            + f'\n[Read more with command_output {{"id": "{job_id}"}}; stop it with '
            "kill_command.]"
        )
    replay = (text_block(text),) if client.has_terminal else None
    return ToolOutcome(
        text, content=(text_block(text),) if not client.has_terminal else (), replay=replay
    )
