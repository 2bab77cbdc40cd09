"""Files reached through their folder's descriptor, every folder opened one name at a time
from `/` without following symbolic links (`changes`: a folder replaced by a link since its path
was resolved fails with `Relinked` instead of taking a change elsewhere)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

# Read at once when hashing a file.
CHUNK = 1024 * 1024

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What `os.link` fails with where a file system has no hard links.
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


class Relinked(OSError):
    """A folder of a resolved path is now a symbolic link, or no folder."""


def open_folder(folder: Path, *, create: bool = False) -> int:
    """A descriptor of `folder`, opened one name at a time from `/` without following symbolic
    links (made where missing when `create`). `Relinked` when one of them is a link or not a
    folder, `FileNotFoundError` when one is missing."""
    fd = os.open("/", _FOLDER)
    for depth, name in enumerate(folder.parts[1:], 2):
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
            inner = os.open(name, _FOLDER, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                where = str(Path(*folder.parts[:depth]))
                raise Relinked(exc.errno, "Not a folder, or a symbolic link", where) from exc
            raise
        finally:
            os.close(fd)
        fd = inner
    return fd


@contextlib.contextmanager
def folder(path: Path, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder `path` stands in (`open_folder`), closed after the block."""
    fd = open_folder(path.parent, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def exists(path: Path) -> bool:
    """Whether `path` names anything (a link included), its folders reached without links."""
    try:
        with folder(path) as fd:
            os.stat(path.name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def digest(fd: int, name: str) -> str | None:
    """sha256 of the regular file `name`; None when there is none, "" when it is not one."""
    try:
        file = os.open(name, _READ, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError:  # a link (ELOOP) or worse: not what the set wrote
        return ""
    with os.fdopen(file, "rb") as handle:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            return ""
        hashed = hashlib.sha256()
        while chunk := handle.read(CHUNK):
            hashed.update(chunk)
    return hashed.hexdigest()


def stat_of(fd: int, name: str) -> os.stat_result | None:
    """`name`'s own status in folder `fd` (a link's, not its target's); None when missing."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def remove(fd: int, name: str) -> None:
    """Unlink `name` in folder `fd` if it is there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=fd)


def write_file(fd: int, name: str, content: bytes, mode: int, *, exact: bool) -> None:
    """Write `name` in folder `fd`, flushed to disk; `mode` whatever the umask when `exact`."""
    file = os.open(name, CREATE, mode, dir_fd=fd)
    try:
        if exact:
            os.fchmod(file, mode)
        write_all(file, content)
    finally:
        os.close(file)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` and flush it to disk."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def keep(fd: int, name: str, kept: str, mode: int) -> None:
    """Keep the old content of `name` as `kept`: a hard link, else a copy."""
    try:
        os.link(name, kept, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        return
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
    with os.fdopen(os.open(name, _READ, dir_fd=fd), "rb") as handle:
        write_file(fd, kept, handle.read(), mode, exact=True)


def sync_folder(folder: Path) -> None:
    """Flush `folder`'s entries (a rename into it) to disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
