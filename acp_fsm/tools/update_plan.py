"""update_plan: the agent's plan for the task, shown in the editor (an ACP `plan` update).

Each call carries the whole plan and replaces the one before. The call is stored like any
other, so `session/load` shows the plan again (`session.replay.replay_updates`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import PlanEntry

from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool
from acp_fsm.updates import PLAN_TOOL

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def plan_text(entries: list[PlanEntry]) -> str:
    """The plan as the model reads it back, a line a step."""
    if not entries:
        return "The plan is now empty."
    lines = [f"{_MARKS[e['status']]} {e['content']} ({e['priority']})" for e in entries]
    return "Plan updated:\n" + "\n".join(lines)


class UpdatePlan(BaseTool):
    name = PLAN_TOOL
    description = (
        "Show the user your plan for a task of several steps, and keep it current: call it "
        "with the whole list each time a step starts or ends (it replaces the previous plan). "
        "Each entry has content, priority (high, medium, low) and status (pending, "
        "in_progress, completed)."
    )
    arguments = "UpdatePlanArguments"
    kind = "think"

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(title="Update the plan", kind=self.kind, raw_input=dict(args))

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # it touches nothing outside the conversation

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        entries: list[PlanEntry] = [  # the arguments are valid: the schema's values
            {"content": entry["content"], "priority": entry["priority"], "status": entry["status"]}
            for entry in args["entries"]
        ]
        env.show_plan(entries)
        return ToolOutcome(plan_text(entries))
