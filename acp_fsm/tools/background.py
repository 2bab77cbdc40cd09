"""Commands that keep running after their call: a session's background jobs.

`run_command` with `background: true` starts one (`bg_1`, `bg_2`, ... per session) in the
editor's terminal when it offers one (embedded in the starting call, so the user watches it),
else locally under a keeper (`acp_fsm.tools.process`'s rules: no keys in its environment,
its own pipes, dies with the agent, kill -9 included). A local job runs as long as any process
it started does, below its keeper: a shell that exited leaving `&` children (or daemons) is
still a running job, said so. `command_output` reads what it printed since the last read,
waiting up to `wait_ms` for more; `kill_command` stops it, everything it started with it. A
cancel stops a wait, never a job; the session stops every running job when it closes, is
deleted or the agent exits; a job that ended is never signalled again. At most
`ACP_FSM_MAX_BACKGROUND` run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from acp_fsm import redact
from acp_fsm.blocking import run_blocking
from acp_fsm.client import ClientCallError
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.system.groups import settle
from acp_fsm.system.keeper import STOP_GRACE_SECONDS
from acp_fsm.system.kept import STOP_MARGIN_SECONDS, Kept, commands_below
from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import ToolError, ask_client, plural
from acp_fsm.tools.process import ShellProtocol, return_code, start_shell
from acp_fsm.updates import text_block

if TYPE_CHECKING:
    from acp_fsm.tools.base import ClientBridge

log = structlog.get_logger("acp.tools")

DEFAULT_MAX_BACKGROUND = 8
# Unread output kept per job; older bytes are dropped (and counted) when nobody reads.
UNREAD_BYTES = 1024 * 1024
# Text one read returns at most (its end: the latest output).
READ_BYTES = 32 * 1024
# How long `run_command` waits for a job's first output before it answers.
FIRST_OUTPUT_S = 1.0
# The longest `wait_ms` of one read.
MAX_WAIT_MS = 60_000
# How often an editor's terminal is asked for new output while a read waits.
TERMINAL_POLL_S = 0.25
# After a job ends, how long output still in the pipe is awaited by a read.
PIPE_DRAIN_SECONDS = 0.5
# Bound on each request that stops an editor's terminal.
TERMINAL_STOP_S = 5.0
# How long an editor's terminal has to report the exit of a command it was told to kill
# (Toad answers terminal/kill and leaves the command running).
KILL_CONFIRM_S = 2.0
# Processes still running after a job's shell exited that a read names (the rest counted).
SHOWN_PROCESSES = 5


def max_background() -> int:
    """`ACP_FSM_MAX_BACKGROUND` (default 8): jobs that may run at once in a session."""
    raw = os.environ.get("ACP_FSM_MAX_BACKGROUND", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        print(f"acp-fsm: ignoring ACP_FSM_MAX_BACKGROUND={raw!r}", file=sys.stderr)
    return DEFAULT_MAX_BACKGROUND


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
    """A background command (one of the two kinds below)."""

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
