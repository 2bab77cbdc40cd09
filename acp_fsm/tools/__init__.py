"""The coding tools the model can call, and their specs for the provider request.

`TOOLS` maps each name to its tool, in the order the model is shown them; names and argument
names are a public contract.
"""

from __future__ import annotations

from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools.base import Tool
from acp_fsm.tools.edit_file import EditFile
from acp_fsm.tools.list_directory import ListDirectory
from acp_fsm.tools.read_file import ReadFile
from acp_fsm.tools.run_command import RunCommand
from acp_fsm.tools.search_files import SearchFiles
from acp_fsm.tools.update_plan import UpdatePlan
from acp_fsm.tools.write_file import WriteFile

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        ReadFile(),
        WriteFile(),
        EditFile(),
        ListDirectory(),
        SearchFiles(),
        RunCommand(),
        UpdatePlan(),
    )
}


def tool_specs() -> tuple[ToolSpec, ...]:
    """What the model is told about every tool, in `TOOLS` order."""
    return tuple(ToolSpec(t.name, t.description, t.input_schema) for t in TOOLS.values())


__all__ = ["TOOLS", "Tool", "tool_specs"]
