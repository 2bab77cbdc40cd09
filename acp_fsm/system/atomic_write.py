"""Files the agent writes whole: replaced at once, never seen half-written."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, content: str, *, mode: int | None = None) -> None:
    """Replace `path` with `content` (UTF-8) so readers see the old or the new file, never part.

    The text goes to a temporary file in the same directory (same file system), is flushed to
    disk, then renamed over the target. Missing parent directories are created. The file gets
    `mode` when one is given (from the start, whatever the umask: a secret is never readable
    by others, even for a moment); otherwise an existing file keeps its permission bits and a
    new one gets the usual umask-derived mode.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(path.stat().st_mode)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(content.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
