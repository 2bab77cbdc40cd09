"""Path resolution for tool arguments (ACP: paths shown to the editor are absolute).

Every path a tool touches is resolved the same way: relative to the session cwd, with `..` and
symlinks resolved by `os.path.realpath`. realpath resolves the longest existing prefix and keeps
the missing tail lexically, so a file that does not exist yet is placed under the real location
of its nearest existing parent (a symlinked directory cannot smuggle a new file out of a root).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def resolve(path: str, cwd: Path) -> Path:
    """The real absolute path of `path`, relative paths taken from `cwd`."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = Path(cwd) / candidate
    return Path(os.path.realpath(candidate))


def inside_roots(path: Path, roots: Iterable[Path]) -> bool:
    """True when `path`, resolved, is one of the resolved `roots` or lies below one."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)


def display(path: Path, cwd: Path) -> str:
    """`path` as a title shows it: relative to cwd when inside it, absolute otherwise."""
    base = Path(os.path.realpath(cwd))
    if path == base:
        return "."
    if path.is_relative_to(base):
        return path.relative_to(base).as_posix()
    return str(path)
