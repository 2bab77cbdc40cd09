"""task: an investigation handed to a subagent, a sub-conversation with a fresh context
(`acp_fsm.turn.subagent`). The main model reads the subagent's report, not the files it read.

The tool itself asks nothing: the subagent's own calls are held to the session's mode (it
has the read-only tools unless the mode lets everything run unasked, and cannot ask the user
anything). Several task calls of one message run at once.
"""

from __future__ import annotations

from typing import Any

from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool
from acp_fsm.updates import text_block

TASK_TOOL = "task"


class Task(BaseTool):
    name = TASK_TOOL
    description = (
        "Hand a self-contained investigation to a subagent with a fresh context (it reads, "
        "lists and searches files and pages itself) and get its report back: use it for broad "
        'questions that would take many reads ("find every caller of X and say which are '
        'async"), so this conversation stays small. The subagent sees nothing of this '
        "conversation: the prompt must say everything it needs, and what the report must "
        "hold. Several task calls in one message run at once."
    )
    arguments = "TaskArguments"
    kind = "think"
    concurrent = True

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        """The task as the call's title and its prompt as its content, of kind `other` in the
        editor: clients draw `think` as reasoning, and some hide its title."""
        return ToolCallView(
            title=self.title(args, env),
            kind="other",
            raw_input=dict(args),
            content=(text_block(str(args.get("prompt", "")).strip()),),
        )

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Task: {' '.join(str(args.get('description', '')).split())}"

    def check(self, args: dict[str, Any]) -> str | None:
        if not args["prompt"].strip():
            return "prompt is blank: say what the subagent is to find out"
        return None

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # its own calls are checked one by one

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return await env.delegate(" ".join(args["description"].split()), args["prompt"])
