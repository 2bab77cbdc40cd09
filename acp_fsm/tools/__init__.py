"""The coding tools the model can call, and their specs for the provider request.

`TOOLS` maps each name to its tool, in the order the model is shown them; names and argument
names are a public contract. `edit_style` picks the edit tools a model is shown: apply_patch for
OpenAI's GPT, o-series and codex models (the format they are trained on), edit_file and
multi_edit for the others; `ACP_FSM_EDIT_TOOLS` overrides the choice.
"""

from __future__ import annotations

import re

from acp_fsm import env_vars
from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools.apply_patch import ApplyPatch
from acp_fsm.tools.ask_user import AskUser
from acp_fsm.tools.base import Tool
from acp_fsm.tools.command_jobs import CommandOutput, KillCommand
from acp_fsm.tools.edit_file import EditFile, MultiEdit
from acp_fsm.tools.fetch_url import FetchUrl
from acp_fsm.tools.glob_files import Glob
from acp_fsm.tools.list_directory import ListDirectory
from acp_fsm.tools.read_file import ReadFile
from acp_fsm.tools.run_command import RunCommand
from acp_fsm.tools.search_files import SearchFiles
from acp_fsm.tools.skill import LoadSkill
from acp_fsm.tools.task import Task
from acp_fsm.tools.update_plan import UpdatePlan
from acp_fsm.tools.write_file import WriteFile

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        ReadFile(),
        WriteFile(),
        EditFile(),
        MultiEdit(),
        ApplyPatch(),
        ListDirectory(),
        Glob(),
        SearchFiles(),
        RunCommand(),
        CommandOutput(),
        KillCommand(),
        FetchUrl(),
        Task(),
        LoadSkill(),
        AskUser(),
        UpdatePlan(),
    )
}


REPLACING = ("edit_file", "multi_edit")
PATCHING = ("apply_patch",)
# OpenAI's model families trained on apply_patch, by name (a router's `openai/` prefix aside).
_PATCH_MODELS = re.compile(r"^(?:[\w.-]+/)?(?:gpt-|o\d|codex)|codex", re.IGNORECASE)


def edit_style(provider: str | None, model: str) -> str:
    """`replace`, `patch` or `both`: what the environment says, else by the provider's wire
    format and the model's name."""
    chosen = env_vars.edit_tools()
    if chosen is not None:
        return chosen
    if provider == "openai" and _PATCH_MODELS.search(model):  # Chat Completions or Responses
        return "patch"
    return "replace"


# A context window this small (a local server's default, say) gets only the tools a task
# cannot do without: the specs of the others would take room the conversation needs.
SMALL_WINDOW_TOKENS = 8192
ESSENTIAL = frozenset(
    {"read_file", "write_file", "edit_file", "apply_patch", "list_directory", "search_files",
     "run_command"}
)  # fmt: skip


def listed(name: str, style: str, window: int | None = None) -> bool:
    """Whether a model call lists the tool `name` with the edit tools of `style`, in a context
    window of `window` tokens. A call to a built-in tool that is not listed still runs (a
    model switched mid-session may keep using the tools it saw)."""
    small = window is not None and window < SMALL_WINDOW_TOKENS
    if small and name in TOOLS and name not in ESSENTIAL:
        return False
    return name not in {"replace": PATCHING, "patch": REPLACING, "both": ()}[style]


def spec_of(tool: Tool) -> ToolSpec:
    """What the model is told about `tool`."""
    return ToolSpec(tool.name, tool.description, tool.input_schema)


def tool_specs() -> tuple[ToolSpec, ...]:
    """What the model is told about every tool, in `TOOLS` order."""
    return tuple(spec_of(t) for t in TOOLS.values())


__all__ = ["TOOLS", "Tool", "edit_style", "listed", "spec_of", "tool_specs"]
