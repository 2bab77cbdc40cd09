"""glob: the files whose paths match a glob below a directory, newest first.

The walk follows no symbolic link, skips version-control folders and what the repository's
`.gitignore` rules ignore (`acp_fsm.tools.ignore`), and stops after `MAX_GLOB_FILES` files;
at most `MAX_GLOB_RESULTS` paths are returned, with a note saying what was left out.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from acp_fsm.blocking import run_blocking
from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError, plural
from acp_fsm.tools.globs import GlobFilter
from acp_fsm.tools.ignore import IgnoreRules
from acp_fsm.tools.paths import utf8_text
from acp_fsm.updates import text_block

# Paths returned, newest first; the rest are counted in a note.
MAX_GLOB_RESULTS = 200
# Files looked at before the walk stops (a huge tree cannot run unbounded).
MAX_GLOB_FILES = 100_000
# Never descended into, ignored or not.
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


def find_files(root: Path, shown: str, pattern: str) -> tuple[list[tuple[float, str]], int, bool]:
    """(mtime, shown path) of the matching files, how many matched, and whether the walk was
    cut (blocking: call it through `run_blocking`)."""
    if not root.exists():
        raise ToolError(f"Directory not found: {shown}")
    if not root.is_dir():
        raise ToolError(f"{shown} is not a directory; glob searches below a directory")
    wanted = GlobFilter(pattern)
    rules = IgnoreRules(root)
    found: list[tuple[float, str]] = []
    seen = 0
    for directory, subdirs, names in os.walk(root):
        base = Path(directory)
        subdirs[:] = sorted(
            d
            for d in subdirs
            if d not in VCS_DIRS
            and not (base / d).is_symlink()
            and not rules.ignored(base / d, is_dir=True)
        )
        relative = base.relative_to(root).as_posix()
        for name in sorted(names):
            seen += 1
            if seen > MAX_GLOB_FILES:
                return found, len(found), True
            path = base / name
            rel = name if relative == "." else f"{relative}/{name}"
            if not wanted.matches(rel) or rules.ignored(path, is_dir=False):
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((info.st_mtime, utf8_text(rel if shown == "." else f"{shown}/{rel}")))
    return found, len(found), False


class Glob(BaseTool):
    name = "glob"
    description = (
        "Find files by name: every file below `path` (default: the working directory) whose "
        "path matches the glob, newest first. `*.py` matches file names at any depth, "
        "`src/**/*.ts` paths relative to `path`, `*.{ts,tsx}` either. Files ignored by "
        f".gitignore are left out. At most {MAX_GLOB_RESULTS} paths are returned."
    )
    arguments = "GlobArguments"
    kind = "search"
    default_path = "."

    def check(self, args: dict[str, Any]) -> str | None:
        try:
            GlobFilter(args["pattern"])
        except ValueError as exc:
            return f"Invalid glob {args['pattern']!r}: {exc}"
        return None

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Find {args.get('pattern', '')} in {self.shown(args, env)}"

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        root, shown = self.target(args, env), self.shown(args, env)
        found, count, cut = await run_blocking(env.token, find_files, root, shown, args["pattern"])
        found.sort(key=lambda entry: (-entry[0], entry[1]))
        lines = [path for _, path in found[:MAX_GLOB_RESULTS]]
        if not lines:
            lines = [f"No file below {shown} matches {args['pattern']}."]
        if count > MAX_GLOB_RESULTS:
            lines.append(
                f"[Showing the {MAX_GLOB_RESULTS} newest of {plural(count, 'matching file')}; "
                "narrow the pattern or the path to see the others.]"
            )
        if cut:
            lines.append(
                f"[The walk stopped after {MAX_GLOB_FILES:,} files; narrow the path to look "
                "further.]"
            )
        output = "\n".join(lines)
        return ToolOutcome(output, content=(text_block(output),))
