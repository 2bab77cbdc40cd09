"""Running the user's hooks (`acp_fsm.hooks`) and reading what they said, as Claude Code does.

A hook is `/bin/sh -c <command>` in the project, in a process group of its own, its event a
JSON object on stdin, with the agent's environment less its keys and configuration
(`redact.command_environment`) plus `CLAUDE_PROJECT_DIR`. It is bounded: killed (its whole
group) after its `timeout`, when it writes more than `MAX_OUTPUT_BYTES`, and when the turn is
cancelled; the reaper kills it if the agent dies. Every hook of an event runs at once.

What it says: exit status 2 blocks (its stderr is the reason); status 0 with a JSON object on
stdout says more (`decision`, `reason`, `continue`, `stopReason`, `systemMessage`,
`hookSpecificOutput.permissionDecision`, `permissionDecisionReason`, `additionalContext`);
any other status is a failure that blocks nothing (unless its stdout is such an object). A
hook that cannot start, times out or floods is a failure too, shown to the user, and ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

from acp_fsm.hooks import Hook
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.redact import command_environment
from acp_fsm.system.groups import signal_group
from acp_fsm.system.reaper import REAPER

log = structlog.get_logger("hooks")

MAX_OUTPUT_BYTES: Final = 256 * 1024  # per stream: a hook that writes more is stopped
SHOWN_CHARS: Final = 2000  # of a reason or a failure's stderr, at most
REAP_SECONDS: Final = 1.0
LEFT_OPEN_S: Final = 0.2
EXIT_POLL_S: Final = 0.02  # after the hook exits, for what its streams still hold
# What blocks, by strength: deny beats ask beats allow (as several rules do).
STRENGTH: Final = {"deny": 3, "ask": 2, "allow": 1}


class Flooded(Exception):
    """A hook wrote more than `MAX_OUTPUT_BYTES` on one stream."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """One hook's run: its exit status (None when it did not finish: `failure` says why)
    and what it wrote."""

    hook: Hook
    status: int | None
    stdout: str = ""
    stderr: str = ""
    failure: str | None = None


@dataclass
class Said:
    """What the hooks of one event said together."""

    decision: str | None = None  # "deny" (a block), "ask" or "allow"; None: nothing
    reasons: list[str] = field(default_factory=list)  # why, for the decision
    context: list[str] = field(default_factory=list)  # for the model
    shown: list[str] = field(default_factory=list)  # for the user: failures, their messages
    halt: str | None = None  # `continue: false`: the turn stops, for this reason

    @property
    def reason(self) -> str:
        return "\n".join(self.reasons) or "(no reason given)"

    def decide(self, decision: str, reason: str | None) -> None:
        """Take `decision` unless a stronger one was made; its reason joins that decision's."""
        current = STRENGTH.get(self.decision or "", 0)
        if STRENGTH[decision] > current:
            self.decision, self.reasons = decision, []
        if self.decision == decision and reason:
            self.reasons.append(reason[:SHOWN_CHARS])


async def run_all(
    hooks: list[Hook], event: dict[str, Any], cwd: Path, token: CancellationToken
) -> Said:
    """Run `hooks` at once with `event` on their stdin; what they said together. `Cancelled`
    when `token` fires (every hook killed)."""
    said = Said()
    if not hooks:
        return said
    data = json.dumps(event, ensure_ascii=False).encode()
    runs = await asyncio.gather(*(run(hook, data, cwd, token) for hook in hooks))
    for done in runs:
        read(done, str(event.get("hook_event_name")), said)
    return said


async def run(hook: Hook, data: bytes, cwd: Path, token: CancellationToken) -> HookRun:
    """Run one hook with `data` on stdin (killed when `token` fires: `Cancelled`)."""
    env = {**command_environment(), "CLAUDE_PROJECT_DIR": str(cwd)}
    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            hook.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(hook, None, failure=f"could not start ({exc})")
    REAPER.started(process.pid)
    try:
        work = asyncio.wait_for(_communicate(process, data), hook.timeout_s)
        out, err = await token.race(work)
    except TimeoutError:
        return HookRun(hook, None, failure=f"did not finish within {hook.timeout_s:g} s")
    except Flooded:
        return HookRun(hook, None, failure=f"wrote more than {MAX_OUTPUT_BYTES:,} bytes")
    finally:
        await _stop(process)
    text = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    log.info("hook_ran", hook=hook.event, command=hook.command, status=process.returncode)
    return HookRun(hook, process.returncode, *text)


async def _communicate(process: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """Write `data` to the hook's stdin (a hook that does not read it is no error) and read
    its two streams, each bounded, until it exits; then what is left in them for a moment
    (a background child it left holding them is killed with its group: the hook's answer is
    its own exit, not its children's)."""
    assert process.stdin and process.stdout and process.stderr

    async def feed() -> None:
        assert process.stdin
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(data)
            await process.stdin.drain()
            process.stdin.close()

    out, err = bytearray(), bytearray()
    readers = [
        asyncio.create_task(_bounded(process.stdout, out)),
        asyncio.create_task(_bounded(process.stderr, err)),
    ]
    feeding = asyncio.create_task(feed())
    exited = asyncio.create_task(_exited(process))
    try:
        waiting: set[asyncio.Task[Any]] = {exited, *readers}
        while not exited.done():
            done, waiting = await asyncio.wait(waiting, return_when="FIRST_COMPLETED")
            if any(task in readers and task.exception() is not None for task in done):
                raise Flooded
        _, late = await asyncio.wait(readers, timeout=LEFT_OPEN_S)
        if late:
            signal_group(process.pid, signal.SIGKILL)  # its children hold the pipes
            await asyncio.wait(late, timeout=REAP_SECONDS)
    finally:
        for task in (*readers, feeding, exited):
            task.cancel()
    return bytes(out), bytes(err)


async def _exited(process: asyncio.subprocess.Process) -> None:
    """The hook's own exit (asyncio's `wait` also waits for its pipes to close, which a
    background child it left may hold for as long as it lives)."""
    while process.returncode is None:  # noqa: ASYNC110 - the exit has no event of its own
        await asyncio.sleep(EXIT_POLL_S)


async def _bounded(stream: asyncio.StreamReader, into: bytearray) -> None:
    """Read `stream` to its end into `into`; `Flooded` past `MAX_OUTPUT_BYTES`."""
    while chunk := await stream.read(65536):
        into += chunk
        if len(into) > MAX_OUTPUT_BYTES:
            raise Flooded


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill what is left of the hook's process group; wait (bounded) for the hook itself."""
    signal_group(process.pid, signal.SIGKILL)  # what it started in the background too
    REAPER.stopped(process.pid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), REAP_SECONDS)


def read(done: HookRun, event: str, said: Said) -> None:
    """Add what one run said to `said`, as Claude Code reads it."""
    named = f"The {event} hook `{done.hook.command}` ({done.hook.source})"
    if done.failure is not None:
        said.shown.append(f"{named} {done.failure}; it was ignored.")
        return
    if done.status == 2:
        said.decide("deny", done.stderr.strip() or None)
        return
    answer = _object(done.stdout)
    if answer is None:
        if done.status != 0:
            detail = done.stderr.strip()[-SHOWN_CHARS:] or "no message"
            said.shown.append(f"{named} failed (exit status {done.status}): {detail}")
        elif event == "UserPromptSubmit" and done.stdout.strip():
            said.context.append(done.stdout.strip())  # plain text: context for the model
        return
    _answered(answer, said)


def _answered(answer: dict[str, Any], said: Said) -> None:
    """What a hook's JSON answer says."""
    if answer.get("continue") is False:
        said.halt = _text(answer.get("stopReason")) or "A hook of the user's stopped the turn."
    if message := _text(answer.get("systemMessage")):
        said.shown.append(message)
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = {"block": "deny", "approve": "allow"}.get(str(answer.get("decision")))
    reason = _text(answer.get("reason"))
    permission = specific.get("permissionDecision")
    if permission in STRENGTH:
        decision, reason = permission, _text(specific.get("permissionDecisionReason")) or reason
    if decision is not None:
        said.decide(decision, reason)
    if context := _text(specific.get("additionalContext")):
        said.context.append(context[: SHOWN_CHARS * 4])


def _object(stdout: str) -> dict[str, Any] | None:
    """The JSON object a hook wrote on stdout; None when it wrote none."""
    if not stdout.lstrip().startswith("{"):
        return None
    try:
        found = json.loads(stdout)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
