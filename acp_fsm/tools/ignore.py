"""The files a repository's `.gitignore` rules leave out, for the tools that walk a tree.

The rules are git's: each `.gitignore` applies to its own directory and below, a deeper one
overrides a shallower one, `!pattern` takes a file back, and nothing below an ignored
directory is looked at. Inside a git repository, the `.gitignore` files of the directories
between its root and the walk's root apply too, and so does `.git/info/exclude`. A rules
file that is not a regular file, or is larger than `MAX_RULES_BYTES`, is not read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

MAX_RULES_BYTES = 256 * 1024


def _read_rules(path: Path) -> list[str]:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RULES_BYTES:
            return []
        return path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return []


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding `.git`, if any."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


class IgnoreRules:
    """Whether a path below `root` is ignored (`root` and the paths: absolute, resolved)."""

    def __init__(self, root: Path) -> None:
        from pathspec import GitIgnoreSpec  # a tool that walks a tree needs it, startup not

        self._compile = GitIgnoreSpec.from_lines
        self.root = root
        repo = repository_root(root)
        self._top = repo or root
        self._specs: dict[Path, GitIgnoreSpec | None] = {}
        if repo is not None:
            exclude = _read_rules(repo / ".git" / "info" / "exclude")
            self._exclude = self._compile(exclude) if exclude else None
        else:
            self._exclude = None

    def _spec(self, directory: Path) -> GitIgnoreSpec | None:
        if directory not in self._specs:
            lines = _read_rules(directory / ".gitignore")
            self._specs[directory] = self._compile(lines) if lines else None
        return self._specs[directory]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git would ignore `path` (its parent directories are known not to be)."""
        suffix = "/" if is_dir else ""
        decision: bool | None = None
        if self._exclude is not None:
            decision = self._exclude.check_file(
                path.relative_to(self._top).as_posix() + suffix
            ).include
        for base in self._bases(path.parent):
            spec = self._spec(base)
            if spec is not None:
                verdict = spec.check_file(path.relative_to(base).as_posix() + suffix).include
                if verdict is not None:
                    decision = verdict
        return bool(decision)

    def _bases(self, directory: Path) -> list[Path]:
        """The directories whose rules apply to entries of `directory`, outermost first."""
        chain = []
        current = directory
        while True:
            chain.append(current)
            if current == self._top or current.parent == current:
                break
            current = current.parent
        return chain[::-1]
