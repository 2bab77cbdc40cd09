"""Path resolution for tool arguments (ACP: paths shown to the editor are absolute).

Every path a tool touches is resolved the same way: relative to the session cwd, with `..` and
symlinks resolved by `os.path.realpath`. realpath resolves the longest existing prefix and keeps
the missing tail lexically, so a file that does not exist yet is placed under the real location
of its nearest existing parent (a symlinked directory cannot smuggle a new file out of a root).

File names are bytes; Python shows bytes that are not UTF-8 as lone surrogates
(surrogateescape). JSON peers with strict parsers (serde_json) reject those, so every name a
tool shows goes through `utf8_text` (`acp_fsm.protocol.codec`, re-exported here for the tools).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from acp_fsm.protocol.codec import is_utf8 as is_utf8
from acp_fsm.protocol.codec import utf8_text as utf8_text


def _real(path: str | os.PathLike[str]) -> str:
    """`os.path.realpath`, or the path normalized as written when the file system cannot take
    it (a NUL byte, a lone surrogate): `validate` refuses such paths, views still show them."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return os.path.normpath(path)


def resolve(path: str, cwd: Path) -> Path:
    """The real absolute path of `path`, relative paths taken from `cwd`. Never raises."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = Path(cwd) / candidate
    return Path(_real(candidate))


def inside_roots(path: Path, roots: Iterable[Path]) -> bool:
    """True when `path`, resolved, is one of the resolved `roots` or lies below one."""
    real = Path(_real(path))
    return any(real.is_relative_to(_real(root)) for root in roots)


def display(path: Path, cwd: Path) -> str:
    """`path` as a title shows it: relative to cwd when inside it, absolute otherwise."""
    base = Path(_real(cwd))
    if path == base:
        return "."
    if path.is_relative_to(base):
        return utf8_text(path.relative_to(base).as_posix())
    return utf8_text(str(path))
