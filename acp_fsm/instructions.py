"""The system prompt of a turn: who the agent is, the environment it works in, and the
project's own instructions (`AGENTS.md`, else `CLAUDE.md`).

Instruction files are read from the session's working directory and each parent up to the
repository root (the nearest folder holding `.git`), outermost first, so that the nearest
file has the last word; outside a repository only the working directory's own file counts.
Each is read at the start of a turn (an edit applies to the next prompt) and cut at
`MAX_INSTRUCTION_BYTES` with a note. Everything here is stable for a day, so a provider's
prompt cache keeps matching across turns.
"""

from __future__ import annotations

import datetime
import os
import platform
import stat
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")  # the first that exists in a folder is read
MAX_INSTRUCTION_BYTES = 32 * 1024

BASE = """You are acp-fsm, a coding agent working inside the user's editor.
The project is at {cwd}. Use the tools to read, search and change files and to run commands;
paths may be relative to the project. Prefer small, precise edits (edit_file) over rewriting
whole files. Some calls need the user's permission; when one is denied, do not insist.
For a task of several steps, keep a plan with update_plan."""


def system_prompt(cwd: Path, additional: tuple[Path, ...] = ()) -> str:
    """The whole system prompt for a turn in `cwd`."""
    parts = [BASE.format(cwd=cwd), environment(cwd, additional)]
    for path, text in project_instructions(cwd):
        parts.append(f"Instructions from {path}:\n\n{text}")
    return "\n\n".join(parts)


def environment(cwd: Path, additional: tuple[Path, ...] = ()) -> str:
    """What the model needs to know of where it runs."""
    lines = [
        f"- Operating system: {platform.system()} {platform.release()}",
        f"- Shell: {os.environ.get('SHELL') or '/bin/sh'}",
        f"- Working directory: {cwd}",
    ]
    if additional:
        lines.append("- Additional directories: " + ", ".join(str(d) for d in additional))
    lines.append(f"- Today's date: {datetime.date.today().isoformat()}")
    root = repository_root(cwd)
    if root is None:
        lines.append("- Git: the working directory is not in a git repository")
    else:
        branch = current_branch(root)
        lines.append(f"- Git: repository at {root}" + (f", on branch {branch}" if branch
                                                      else ", detached HEAD"))
    return "Environment:\n" + "\n".join(lines)


def repository_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` that holds `.git` (a folder, or a worktree's
    file), or None."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def current_branch(root: Path) -> str | None:
    """The branch checked out in the repository at `root`, read from its HEAD (None when
    detached or unreadable)."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            pointer = git.read_text(encoding="utf-8").strip()
            git = (root / pointer.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    prefix = "ref: refs/heads/"
    return head[len(prefix):] if head.startswith(prefix) else None


def project_instructions(cwd: Path) -> list[tuple[Path, str]]:
    """(file, text) of each folder's instruction file, outermost first."""
    root = repository_root(cwd)
    folders = [cwd]
    if root is not None:
        folders += [p for p in cwd.parents if p == root or root in p.parents]
    found = []
    for folder in reversed(folders):
        for name in INSTRUCTION_FILES:
            text = _read_regular(folder / name)
            if text is not None:
                found.append((folder / name, text))
                break
    return found


def _read_regular(path: Path) -> str | None:
    """The text of `path` if it is a regular file (a FIFO or a device would block), cut at
    `MAX_INSTRUCTION_BYTES` with a note; None if there is none."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        with open(path, "rb") as handle:
            data = handle.read(MAX_INSTRUCTION_BYTES + 1)
    except OSError:
        return None
    text = data[:MAX_INSTRUCTION_BYTES].decode("utf-8", "replace")
    if len(data) > MAX_INSTRUCTION_BYTES:  # a character cut in two is dropped
        text = text.rstrip("\ufffd") + (f"\n\n[{path.name} is {info.st_size:,} bytes; only "
                                         f"the first {MAX_INSTRUCTION_BYTES:,} are shown.]")
    return text
