"""Reading the small files the agent reads for itself: the stored credentials, a project's
`AGENTS.md`, a repository's `HEAD`.

Any of them can be something else than the small regular file it should be: a named pipe,
which blocks whoever opens or reads it until a writer comes; a link to `/dev/zero`, which
never ends; a file of gigabytes. So only a regular file is read, and only up to a limit the
caller names. The type is checked before the open (a device is never opened at all) and
again on what was opened, which is opened without blocking: a pipe swapped in between the
two checks is refused, not waited on.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

# O_NONBLOCK: a FIFO swapped in after the type check cannot block the open (the fstat after the
# open refuses it); on a regular file it changes nothing. O_NOCTTY: a terminal never becomes ours.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# What a file that is not a regular file is, in words.
_SPECIAL_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "named pipe"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


class NotRegular(OSError):
    """The path names something other than a regular file (an `OSError`: to a caller, a
    file that cannot be read)."""

    def __init__(self, path: Path | str, mode: int) -> None:
        self.kind = kind_of(mode)
        super().__init__(f"{path} is a {self.kind}, not a regular file")


class Head(NamedTuple):
    """The start of a file, and whether there was more."""

    data: bytes  # at most the limit asked for
    size: int  # the file's size as the file system gives it
    cut: bool  # the file holds more than `data`


def kind_of(mode: int) -> str:
    """What an `st_mode` that is not a regular file's names: "named pipe", "directory"..."""
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), "special file")


def read_head(path: Path | str, limit: int) -> Head:
    """The first `limit` bytes of the regular file at `path` (links followed). Never blocks
    on what is not a regular file: raises `NotRegular` for it, `FileNotFoundError` when there
    is nothing, another `OSError` when it cannot be read."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(path, mode)
    fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # what was opened is what was checked
            raise NotRegular(path, info.st_mode)
        chunks: list[bytes] = []
        wanted = limit + 1  # one byte more says whether the file goes on
        while wanted > 0 and (chunk := os.read(fd, wanted)):
            chunks.append(chunk)
            wanted -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return Head(data[:limit], max(info.st_size, len(data)), len(data) > limit)
