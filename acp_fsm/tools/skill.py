"""skill: the instructions of one of the user's skills (`acp_fsm.library`), loaded when the
model decides a task needs them; the system prompt lists the skills with their descriptions.
Reading a skill's other files with read_file asks nothing either (`ToolEnv.readable`)."""

from __future__ import annotations

from typing import Any

from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError
from acp_fsm.updates import text_block

SKILL_TOOL = "skill"


class LoadSkill(BaseTool):
    name = SKILL_TOOL
    description = (
        "Load one of the user's skills by name (the system prompt lists them with what each "
        "is for): its instructions, and where its other files are. Load a skill when a task "
        "matches its description, then follow it."
    )
    arguments = "SkillArguments"
    kind = "read"

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(title=self.title(args, env), kind=self.kind, raw_input=dict(args))

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Load the skill {args.get('name', '')}"

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # the user's own skills, read from their folders

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        skills = env.library.skills
        skill = skills.get(args["name"])
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            raise ToolError(f"There is no skill named {args['name']!r}. The skills: {known}.")
        text = skill.loaded()
        return ToolOutcome(text, content=(text_block(text),))
