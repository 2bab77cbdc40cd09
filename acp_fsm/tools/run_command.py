"""run_command: a shell command in the session cwd, in the editor's terminal when it has one.

With a client terminal (ACP terminal/*) the editor shows the command live: create, embed the
terminal in the call at once, wait for exit (raced against the timeout and the turn's token),
kill on timeout or cancel, read the output, and always release. Otherwise the command runs as
a local child process (`acp_fsm.tools.process`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.background import start_in_background
from acp_fsm.tools.base import ClientBridge, ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import MutatingTool, ask_client
from acp_fsm.tools.process import OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, OutputCapture, run_local
from acp_fsm.tools.shown_terminal import ShownTerminal
from acp_fsm.updates import text_block

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContentTerminal

log = structlog.get_logger("acp.tools")

# Time a command may run when the call gives no timeout_ms.
DEFAULT_TIMEOUT_MS = 120_000
# The longest timeout_ms a call may ask for.
MAX_TIMEOUT_MS = 600_000
# Output bytes the editor is asked to keep for a terminal (the same budget as local runs).
TERMINAL_OUTPUT_BYTE_LIMIT = OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES
# Bound on each cleanup request (terminal/kill, terminal/release), which runs even on cancel.
CLEANUP_TIMEOUT_SECONDS = 5.0
# Characters of the command shown in the editor's title.
TITLE_COMMAND_CHARS = 80
# What the user is told of a background command before allowing it.
BACKGROUND_NOTE = (
    "It keeps running in the background after this call, until it ends, kill_command stops "
    "it, or the session or the agent ends."
)


def signal_name(number: int) -> str:
    """`SIGTERM` for 15; the bare number for a signal Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def short_command(command: str) -> str:
    """The command's first line, cut to `TITLE_COMMAND_CHARS` for a title."""
    lines = command.strip().splitlines() or [""]
    first = lines[0]
    if len(first) > TITLE_COMMAND_CHARS or len(lines) > 1:
        return first[:TITLE_COMMAND_CHARS].rstrip() + "…"
    return first


def status_line(exit_code: int | None, signal_text: str | None, timed_out_ms: int | None) -> str:
    """How the command ended, first in what the model reads."""
    if timed_out_ms is not None:
        return f"Timed out after {timed_out_ms} ms; the command was killed."
    if exit_code is not None:
        return f"Exit code: {exit_code}"
    if signal_text:
        return f"Killed by signal {signal_text}"
    return "Exit status unknown."


def capped(text: str, *, cut_before: bool = False) -> str:
    """`text` within the head+tail output budget (`cut_before`: it is the end of a longer
    output already)."""
    capture = OutputCapture()
    capture.feed(text.encode("utf-8"))
    return capture.text(cut_before=cut_before)


async def _cleanup(request: Awaitable[None], what: str, terminal_id: str) -> None:
    """A cleanup request that must not fail the call (nor hang it)."""
    try:
        await asyncio.wait_for(request, CLEANUP_TIMEOUT_SECONDS)
    except Exception as exc:
        log.warning(
            "terminal_cleanup_failed",
            request=what,
            terminal_id=terminal_id,
            error=str(exc) or type(exc).__name__,
        )


async def _exit_or_timeout(
    client: ClientBridge, terminal_id: str, seconds: float
) -> dict[str, Any] | None:
    """The terminal's exit status, or None when it did not exit within `seconds`."""
    try:
        return await asyncio.wait_for(client.wait_for_terminal_exit(terminal_id), seconds)
    except TimeoutError:
        return None


class RunCommand(MutatingTool):
    name = "run_command"
    description = (
        "Run a shell command (`sh -c`) in the working directory, non-interactively (stdin is "
        "empty). Returns the exit code, then stdout and stderr together. Long output keeps its "
        f"first {OUTPUT_HEAD_BYTES // 1024} KiB and last {OUTPUT_TAIL_BYTES // 1024} KiB. "
        f"Killed after timeout_ms (default {DEFAULT_TIMEOUT_MS // 1000} s, at most "
        f"{MAX_TIMEOUT_MS // 1000} s); background processes are stopped when it exits. With "
        "background true (a dev server, a watcher, a long build) it keeps running: the call "
        "returns at once with an id (bg_1, ...) and its first output; read more with "
        "command_output, stop it with kill_command."
    )
    arguments = "RunCommandArguments"
    kind = "execute"
    unpredictable = True

    def check(self, args: dict[str, Any]) -> str | None:
        if not args["command"].strip():
            return "command is blank"
        return None

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """A command has no path to confine: "always" for it means any command."""
        return True

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        shown = f"Run `{short_command(str(args.get('command', '')))}`"
        return f"{shown} in the background" if args.get("background") else shown

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        """The whole command and where it runs, for the user to judge before allowing it (and
        that it outlives the call, when it does)."""
        shown = f"```sh\n{args.get('command', '')}\n```\nin {env.cwd}"
        if args.get("background"):
            shown += f"\n\n{BACKGROUND_NOTE}"
        return ToolCallView(
            title=self.title(args, env),
            kind=self.kind,
            raw_input=dict(args),
            content=(text_block(shown),),
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        command: str = args["command"]
        if args.get("background"):
            return await start_in_background(command, env)
        timeout_ms = int(args.get("timeout_ms", DEFAULT_TIMEOUT_MS))
        if env.client.has_terminal:
            return await self._in_terminal(command, timeout_ms, env)
        shown: ShownTerminal | None = None
        if env.client.shows_terminals:  # followed live, in a terminal of ours
            shown = ShownTerminal(env.show_terminal, command, str(env.cwd))
            env.report((shown.block,))
        try:
            result = await run_local(
                command,
                env.cwd,
                timeout_ms / 1000,
                env.token,
                None if shown is None else shown.feed,
            )
        except BaseException:
            if shown is not None:
                shown.exited(None, None)  # stopped: how it ended is not known
            raise
        code = result.returncode
        exit_code = code if code is not None and code >= 0 else None
        signal_text = signal_name(-code) if code is not None and code < 0 else None
        status = status_line(exit_code, signal_text, timeout_ms if result.timed_out else None)
        if result.stopped_background:
            status += "\n[Processes the command left running in the background were stopped.]"
        output = f"{status}\n{result.output or '(no output)'}"
        if shown is None:
            return ToolOutcome(output, content=(text_block(output),))
        shown.exited(exit_code, signal_text)
        # The terminal stays as it is shown; a reload shows the output as text.
        return ToolOutcome(
            output, content=(shown.block, text_block(status)), replay=(text_block(output),)
        )

    async def _in_terminal(self, command: str, timeout_ms: int, env: ToolEnv) -> ToolOutcome:
        client = env.client
        terminal_id = await ask_client(
            env,
            client.create_terminal("sh", ["-c", command], str(env.cwd), TERMINAL_OUTPUT_BYTE_LIMIT),
            "start a terminal",
        )
        block: ToolCallContentTerminal = {"type": "terminal", "terminalId": terminal_id}
        try:
            env.report((block,))
            exit_status = await ask_client(
                env,
                _exit_or_timeout(client, terminal_id, timeout_ms / 1000),
                "wait for the command",
            )
            if exit_status is None:
                await _cleanup(client.kill_terminal(terminal_id), "kill", terminal_id)
            result = await ask_client(
                env, client.terminal_output(terminal_id), "read the terminal output"
            )
        except BaseException:
            # A cancel (phase 2) or a failure: kill and release go out now; the answer to the
            # prompt does not wait for a slow editor to confirm them.
            client.abandon_terminal(terminal_id)
            raise
        # The command is over and its result in hand: a cancel now stops only our wait for the
        # editor's answer to the release, which still goes out (and the result is kept).
        release = asyncio.ensure_future(
            _cleanup(client.release_terminal(terminal_id), "release", terminal_id)
        )
        with contextlib.suppress(Cancelled):
            await env.token.race(asyncio.shield(release))
        status = dict(exit_status or result.get("exitStatus") or {})
        text = status_line(
            status.get("exitCode"),
            status.get("signal") or None,
            timeout_ms if exit_status is None else None,
        )
        if result.get("truncated"):
            text += (
                f"\n[The editor kept only the last {TERMINAL_OUTPUT_BYTE_LIMIT:,} bytes of "
                "the output.]"
            )
        output = (
            capped(str(result.get("output") or ""), cut_before=bool(result.get("truncated")))
            or "(no output)"
        )
        # The terminal stays embedded as it is; it will not exist in a reload, its output will.
        return ToolOutcome(f"{text}\n{output}", replay=(text_block(f"{text}\n{output}"),))
