"""The system prompt of a turn: who the agent is, the environment it works in, and the
project's own instructions (`AGENTS.md`, else `CLAUDE.md`).

Instruction files are read from the session's working directory and each parent up to the
repository root (the nearest folder holding `.git`), outermost first, so that the nearest
file has the last word; outside a repository only the working directory's own file counts.
Each is read at the start of a turn (an edit applies to the next prompt), off the event loop,
and only if it is a regular file (`acp_fsm.small_files`), cut at `MAX_INSTRUCTION_BYTES` with
a note. One that leads out of the repository (a link; outside a repository, out of the
session's directories) is not read but named to the user: what the model is sent stays the
project's. Everything here is stable for a day, so a provider's prompt cache keeps matching
across turns.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import NamedTuple

from acp_fsm.protocol.codec import utf8_text
from acp_fsm.small_files import read_head

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")  # the first that exists in a folder is read
MAX_INSTRUCTION_BYTES = 32 * 1024
# HEAD and a worktree's `.git` file hold one line: a ref, or a path (PATH_MAX is 4096).
MAX_GIT_FILE_BYTES = 8 * 1024

BASE = """You are acp-fsm, a coding agent working in the user's editor on the project at {cwd}.
You read, search and change its files and run commands with the tools; paths may be relative
to the project.

How to work:
- Explore before you change anything: find with search_files and glob, then read what matters
  with read_file (a window of lines, not whole large files). Hand a broad question that would
  take many reads to a subagent with task, and work from its report.
- Change files in small, precise steps: the edit tool you are given (edit_file and multi_edit,
  or apply_patch) for existing files, write_file for new files or whole rewrites. Keep the
  file's style and change only what the task needs.
- Verify: when the project has tests, a build or a linter, run them with run_command and read
  the failures before you call the work done. Start servers and watchers with background true,
  read them with command_output, and stop them with kill_command when you are finished.
- For a task of several steps, keep a plan with update_plan and mark each step as it ends.
- Ask the user only when you are blocked or the request is ambiguous in a way that matters.
  When the user denies a call, do not retry it: find another way, or say what you need.
- Never say you changed, ran or checked something you did not; when a step failed, say so.

How to answer: concisely, in plain prose or short lists. Name the files (and lines) you
changed, the commands you ran and what they showed, and what is left to do, if anything."""

SUBAGENT = """You are a subagent of acp-fsm, a coding agent working inside the user's editor. The
agent gave you one task; you see nothing of its conversation, and it sees nothing of your work
but your report. The project is at {cwd}. Investigate with the tools: search_files and glob to
find, read_file for what matters, in as few calls as you can. You cannot ask the user anything,
and a call that would need their permission is refused: do what you can without it. Change
files or run commands only if the task asks for it and the tools allow it. When you are done,
answer with your report and nothing else: complete but concise, with file paths and line
numbers for what you found, and say plainly what you could not find out."""


# The opening of a window too small for BASE's guidance (a local server's default, say): the
# room goes to the conversation, as with the tools (`acp_fsm.tools.SMALL_WINDOW_TOKENS`).
BRIEF = """You are acp-fsm, a coding agent in the user's editor, working on the project at {cwd}.
Use the tools to read, search and change files and run commands. Read before you change; make
small, precise edits; run the project's tests when it has them. When the user denies a call,
do not retry it. Never claim a change you did not make. Answer concisely."""


def reopened(main: str, cwd: Path, opening: str) -> str:
    """The system prompt `main` with `opening` (a template of `{cwd}`) in place of BASE's."""
    head = BASE.format(cwd=cwd)
    rest = main[len(head) :] if main.startswith(head) else f"\n\n{main}"
    return opening.format(cwd=cwd) + rest


def subagent_prompt(main: str, cwd: Path) -> str:
    """A subagent's system prompt: its own opening, then what the session's system prompt
    `main` says of the environment and the project's instruction files."""
    return reopened(main, cwd, SUBAGENT)


class Instructions(NamedTuple):
    """A project's instruction files, and those it leads to but that were not read."""

    found: list[tuple[Path, str]]  # (file, text), outermost first
    skipped: list[str]  # a file not read, and why, in words for the user


class SystemPrompt(NamedTuple):
    text: str
    skipped: list[str]  # `Instructions.skipped`: what the user is to be told


def system_prompt(cwd: Path, additional: tuple[Path, ...] = ()) -> SystemPrompt:
    """The whole system prompt for a turn in `cwd` (it reads files: call it off the event
    loop)."""
    parts = [BASE.format(cwd=cwd), environment(cwd, additional)]
    instructions = project_instructions(cwd, additional)
    for path, text in instructions.found:
        parts.append(f"Instructions from {path}:\n\n{text}")
    return SystemPrompt("\n\n".join(parts), instructions.skipped)


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
        lines.append(f"- Git: repository at {root}, {head_state(root)}")
    return "Environment:\n" + "\n".join(lines)


def repository_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` that holds `.git` (a folder, or a worktree's
    file), or None."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def head_state(root: Path) -> str:
    """The checked-out branch of the repository at `root` in words, read from its HEAD:
    `on branch <name>`, `detached HEAD`, or that HEAD could not be read (missing, not a
    regular file, longer than a ref, not one line)."""
    git = _git_dir(root)
    head = _git_line(git / "HEAD") if git is not None else None
    if head is None:
        return "its HEAD could not be read"
    prefix = "ref: refs/heads/"
    return f"on branch {head[len(prefix) :]}" if head.startswith(prefix) else "detached HEAD"


def _git_dir(root: Path) -> Path | None:
    """The repository's git directory: `.git`, or where a worktree's or a submodule's
    `.git` file points ("gitdir: <path>")."""
    git = root / ".git"
    if git.is_dir():
        return git
    pointer = _git_line(git)
    return _real(root / pointer.removeprefix("gitdir:").strip()) if pointer else None


def _git_line(path: Path) -> str | None:
    """The one line of a git file (HEAD, a `.git` pointer), or None when it is not one."""
    try:
        head = read_head(path, MAX_GIT_FILE_BYTES)
        line = head.data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return line if line and not head.cut and line.isprintable() else None


def project_instructions(cwd: Path, additional: tuple[Path, ...] = ()) -> Instructions:
    """Each folder's instruction file, outermost first. One that leads outside the project
    (a link out of the repository, or outside a repository out of the session's directories,
    `cwd` and `additional`) is not read: the user would not expect it sent to the model."""
    root = repository_root(cwd)
    folders = [cwd]
    if root is not None:
        folders += [p for p in cwd.parents if p == root or root in p.parents]
    bases = [_real(p) for p in ((root, cwd) if root is not None else (cwd, *additional))]
    outside = "the repository" if root is not None else "the session's directories"
    found: list[tuple[Path, str]] = []
    skipped: list[str] = []
    for folder in reversed(folders):
        for name in INSTRUCTION_FILES:
            path = folder / name
            target = _real(path)
            if not any(target.is_relative_to(base) for base in bases):
                if target.exists():
                    skipped.append(  # the link's target is any name on disk
                        f"{path} was not read: it leads to {utf8_text(str(target))}, outside "
                        f"{outside}, so its instructions are not followed."
                    )
                    break
                continue
            text = _read_regular(path)
            if text is not None:
                found.append((path, text))
                break
    return Instructions(found, skipped)


def _real(path: Path) -> Path:
    """`path` with every link resolved (a link loop stays as it is: it leads nowhere)."""
    return Path(os.path.realpath(path))


def _read_regular(path: Path) -> str | None:
    """The text of `path` if it is a regular file (a FIFO or a device is never read), cut at
    `MAX_INSTRUCTION_BYTES` with a note; None if there is none."""
    try:
        head = read_head(path, MAX_INSTRUCTION_BYTES)
    except OSError:
        return None
    text = head.data.decode("utf-8", "replace")
    if head.cut:  # a character cut in two is dropped
        text = text.rstrip("\ufffd") + (
            f"\n\n[{path.name} is {head.size:,} bytes; only "
            f"the first {MAX_INSTRUCTION_BYTES:,} are shown.]"
        )
    return text
