"""list_directory: the entries of one directory on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from acp_fsm.blocking import run_blocking
from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError
from acp_fsm.tools.paths import utf8_text
from acp_fsm.updates import text_block

# Entries shown for one directory; the rest are counted in a note.
MAX_LIST_ENTRIES = 1000


def directory_entries(path: Path, shown: str) -> list[str]:
    """Entry names (valid UTF-8) sorted, directories (and links to directories) ending in `/`
    (blocking: call it through `run_blocking`)."""
    if not path.exists():
        raise ToolError(f"Directory not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"{shown} is not a directory; use read_file to read a file")
    with os.scandir(path) as entries:
        names = [utf8_text(entry.name) + ("/" if entry.is_dir() else "") for entry in entries]
    return sorted(names)


class ListDirectory(BaseTool):
    name = "list_directory"
    description = (
        "List the entries of a directory, sorted by name; subdirectories end with `/`. "
        f"At most {MAX_LIST_ENTRIES:,} entries are shown."
    )
    arguments = "ListDirectoryArguments"
    kind = "read"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"List {self.shown(args, env)}"

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        path, shown = self.target(args, env), self.shown(args, env)
        names = await run_blocking(env.token, directory_entries, path, shown)
        if not names:
            output = f"({shown} is empty)"
        elif len(names) > MAX_LIST_ENTRIES:
            output = "\n".join(names[:MAX_LIST_ENTRIES]) + (
                f"\n[Showing the first {MAX_LIST_ENTRIES:,} of {len(names):,} entries; use "
                "search_files with a glob or run_command to look for specific names.]"
            )
        else:
            output = "\n".join(names)
        return ToolOutcome(output, content=(text_block(output),))
