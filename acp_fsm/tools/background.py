"""Commands that keep running after their call: starting one, and what a read of one says
(the session's jobs: `job.BackgroundJobs`).

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

import structlog

from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import ask_client
from acp_fsm.tools.job import UNREAD_BYTES, Job, Read
from acp_fsm.tools.local_job import LocalJob
from acp_fsm.tools.terminal_job import TerminalJob
from acp_fsm.updates import text_block

log = structlog.get_logger("acp.tools")

# How long `run_command` waits for a job's first output before it answers.
FIRST_OUTPUT_S = 1.0
# The longest `wait_ms` of one read.
MAX_WAIT_MS = 60_000


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
