"""Path resolution for tool arguments (ACP: paths shown to the editor are absolute).

Every path a tool touches is resolved the same way: relative to the session cwd, with `..` and
symlinks resolved by `os.path.realpath`. realpath resolves the longest existing prefix and keeps
the missing tail lexically, so a file that does not exist yet is placed under the real location
of its nearest existing parent (a symlinked directory cannot smuggle a new file out of a root).

File names are bytes; Python shows bytes that are not UTF-8 as lone surrogates
(surrogateescape). JSON peers with strict parsers (serde_json) reject those, so every name a
tool shows goes through `utf8_text`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def is_utf8(text: str) -> bool:
    """True when `text` has no lone surrogate, so it encodes as UTF-8 (and strict JSON)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_text(text: str) -> str:
    """`text` as valid UTF-8: bytes of a file name that are not UTF-8 shown as `\\xNN`.

    A name from the file system carries such bytes as surrogateescape surrogates, which map
    back to the bytes; any other lone surrogate is shown by its UTF-8-style bytes.
    """
    if is_utf8(text):
        return text
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


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
