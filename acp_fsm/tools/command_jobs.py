"""command_output and kill_command: reading and stopping the session's background commands
(`acp_fsm.tools.background`). Neither asks permission: starting the command did."""

from __future__ import annotations

from typing import Any

from acp_fsm.tools.background import MAX_WAIT_MS, describe
from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool
from acp_fsm.updates import text_block

# What kill_command says of a command still running after it was killed (an editor's
# terminal that answers terminal/kill and leaves it running, as Toad's does).
SURVIVED = (
    "{job} was told to stop, but it has not exited: it is still running. Try kill_command "
    "again, or ask the user to stop it (in the editor's terminal, when it runs there)."
)


class _JobTool(BaseTool):
    """A tool about one background command, named by `id`."""

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # it touches nothing but a command the user already allowed

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(title=self.title(args, env), kind=self.kind, raw_input=dict(args))


class CommandOutput(_JobTool):
    name = "command_output"
    description = (
        "Read what a background command (started with run_command and background true) printed "
        "since the last read, and whether it has ended (with its exit status). wait_ms waits up "
        f"to that long for new output or the end (at most {MAX_WAIT_MS // 1000} s); without it "
        "the call returns at once."
    )
    arguments = "CommandOutputArguments"
    kind = "read"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Output of {args.get('id', '')}"

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        job = env.background.get(args["id"])
        read = await job.read(int(args.get("wait_ms", 0)) / 1000, env.token)
        output = describe(job, read)
        return ToolOutcome(output, content=(text_block(output),))


class KillCommand(_JobTool):
    name = "kill_command"
    description = (
        "Stop a background command and everything it started (even what left its process "
        "group) and return what it printed since the last read."
    )
    arguments = "KillCommandArguments"
    kind = "execute"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Stop {args.get('id', '')}"

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        job = env.background.get(args["id"])
        was = job.ended
        await job.kill()
        read = await job.read(0, env.token)
        output = describe(job, read)
        if was is not None:
            output = f"{job.id} had already ended ({was}).\n" + output.split("\n", 1)[1]
        elif read.ended is None:  # the kill was answered, and the command runs on
            output = SURVIVED.format(job=job.id) + "\n" + output.split("\n", 1)[1]
        return ToolOutcome(output, content=(text_block(output),), is_error=read.ended is None)
