"""The process edge: claim stdout for protocol frames before anything else can write to it.

ACP's stdout carries JSON-RPC only. `claim_stdout` moves the real stdout to a private,
non-inheritable descriptor and points fd 1 (and `sys.stdout`) at stderr, so a stray `print()`
in a library or the output of a child process lands in the log, never in the protocol stream.
Only `os` and `sys` are imported here: this runs before the first byte is read.
"""

from __future__ import annotations

import os
import select
import stat
import sys
import time


class StderrWriter:
    """`sys.stderr` (and `sys.stdout`) of the serving process: a text stream on fd 2 that can
    neither raise nor block.

    When the editor quits, all three pipes close together and every write to stderr fails
    (EPIPE; EIO once the terminal is gone). A log line must not be what stops the shutdown, so
    the first such failure turns this writer off for good. When stderr is a pipe, each piece of
    at most `PIPE_BUF` bytes is written only once the pipe has room for it (a zero-timeout
    poll), so a full pipe drops the rest of the line instead of stalling the agent behind an
    editor that does not read its stderr. (The pipe is not made non-blocking: the launcher
    that started us, npx or uvx say, may share it.) See docs/shutdown.md.
    """

    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, fd: int = 2) -> None:
        self._fd = fd
        self.broken = False
        self.dropped = 0  # lines lost, in whole or in part, to a full pipe
        self._cut = False  # a line was dropped part-way: the next write ends it first
        try:
            self._pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
        except OSError:
            self._pipe, self.broken = False, True

    def __repr__(self) -> str:
        state = "broken" if self.broken else "open"
        return f"<StderrWriter fd={self._fd} {state} dropped={self.dropped}>"

    def write(self, text: str) -> int:
        if self.broken or not text:
            return len(text)
        data = text.encode("utf-8", "backslashreplace")
        if self._cut:
            data = b"\n" + data
        view = memoryview(data)
        try:
            while view:
                if self._pipe and not select.select([], [self._fd], [], 0)[1]:
                    self.dropped += 1
                    if len(view) < len(data):  # part of it is out: a line left open
                        self._cut = True
                    return len(text)
                view = view[os.write(self._fd, view[: select.PIPE_BUF] if self._pipe else view) :]
        except OSError:  # EPIPE, EIO, EBADF: nobody will ever read it
            self.broken = True
            return len(text)
        self._cut = False
        return len(text)

    def flush(self) -> None:
        """Every write is already unbuffered."""

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False


def claim_stdout() -> int:
    """Return a private duplicate of fd 1 for protocol output, redirect fd 1 to stderr, and
    make `sys.stdout` and `sys.stderr` a `StderrWriter`. A closed stderr becomes /dev/null."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        os.fstat(2)
    except OSError:  # started with stderr closed (`2>&-`): fd 2 must not be reused by accident
        null = os.open(os.devnull, os.O_WRONLY)
        if null != 2:
            os.dup2(null, 2)
            os.close(null)
    protocol_fd = os.dup(1)  # os.dup creates a non-inheritable descriptor
    os.dup2(2, 1)
    sys.stdout = sys.stderr = StderrWriter(2)
    return protocol_fd


def read_line_blocking(
    fd: int, limit: int, buffered: bytes = b"", timeout_s: float | None = None
) -> tuple[bytes | None, bytes, bool]:
    """Read from `fd`, after the bytes `buffered` already read from it, until the first
    newline, EOF, `limit` bytes or, with `timeout_s`, that many seconds without a line.

    Returns (first line without its newline, or None if none was completed; all bytes read after
    that line; whether input ended). Used at startup, before the event loop exists. On a
    terminal an EOF (Ctrl+D) is not sticky, so the caller must not read again after it.
    """
    buffer = bytearray(buffered)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            return bytes(buffer[:newline]), bytes(buffer[newline + 1 :]), False
        if len(buffer) > limit:
            return None, bytes(buffer), False
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None, bytes(buffer), False
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the terminal is gone
            chunk = b""
        if not chunk:
            return None, bytes(buffer), True
        buffer += chunk


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of all of `data` (startup path only)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
