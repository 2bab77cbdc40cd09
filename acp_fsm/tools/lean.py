"""The tool list a small model on a local server can afford (docs/local-servers.md).

A compatible server's model (llama.cpp, Ollama, vLLM, LM Studio) reads every token of the tool
list at the start of a session, at a local machine's speed, and a small one cannot use most
of the tools anyway. By default it is shown only the tools a coding task cannot do without,
each with a one-line description and only the arguments a first call needs; its calls run
the same tools, so an argument it was not shown (`offset`, `timeout_ms`) still works.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools.base import Tool


class Lean(NamedTuple):
    """A tool as the small list shows it: its description, and each argument shown with a
    few words of its own (the types and bounds come from the tool's schema)."""

    description: str
    arguments: dict[str, str]


LEAN: dict[str, Lean] = {
    "read_file": Lean("Read a text file.", {"path": "File path, relative to the project."}),
    "write_file": Lean(
        "Create a file or replace its whole content.",
        {"path": "File path.", "content": "The complete new content."},
    ),
    "edit_file": Lean(
        "Replace text in a file: old_text must occur exactly once (read the file first).",
        {
            "path": "File path.",
            "old_text": "The exact text to replace.",
            "new_text": "Its replacement.",
        },
    ),
    "apply_patch": Lean(
        "Change files with a patch from `*** Begin Patch` to `*** End Patch`.",
        {"patch": "The whole patch."},
    ),
    "list_directory": Lean("List a directory.", {"path": "Directory path (`.` for the project)."}),
    "search_files": Lean(
        "Search files for a regular expression; returns `path:line: text`.",
        {"pattern": "The regular expression.", "path": "Where to search (default: everywhere)."},
    ),
    "run_command": Lean(
        "Run a shell command in the project; returns its exit code and output.",
        {"command": "The shell command."},
    ),
}


def lean_spec(tool: Tool) -> ToolSpec:
    """`tool` as the small list shows it (`LEAN` holds it): the same object at every call."""
    spec = _SPECS.get(tool.name)
    if spec is None:
        spec = _SPECS[tool.name] = _made(tool)
    return spec


_SPECS: dict[str, ToolSpec] = {}


def _made(tool: Tool) -> ToolSpec:
    lean = LEAN[tool.name]
    full: dict[str, Any] = tool.input_schema
    properties = {
        name: {**_bare(full["properties"][name]), "description": words}
        for name, words in lean.arguments.items()
    }
    schema = {
        "type": "object",
        "properties": properties,
        "required": [name for name in full.get("required", ()) if name in properties],
    }
    return ToolSpec(tool.name, lean.description, schema)


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    """An argument's schema without its long description (its type and enum stay)."""
    return {key: value for key, value in schema.items() if key in ("type", "enum")}
